# PyTorch from the inside: two commands.
#   make course   set up (first time) and open the course in JupyterLab
#   make test     set up (first time), lint (ruff, configured in pyproject.toml) and run every test, then
#                 the browser test (make browser: the notebooks in JupyterLab in headless Chromium)
# Set COURSE_REQUIRE_ORACLE=1 to also install the oracles, real PyTorch (torch==2.13.0, CPU), the
# reference safetensors package and tabulate (torch's print_tabular uses it), and make the oracle tests
# fail instead of skipping when one is missing (CI does this).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
BROWSER_STAMP := $(VENV)/.browser-stamp
TEST_STAMP := $(VENV)/.test-stamp
THREADS := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

.PHONY: course test browser oracle bench notebooks clean

# course_lib (the library, pyproject.toml) with its compiler extra, and the course's tools
# (tools/pyproject.toml), both editable
$(STAMP): pyproject.toml tools/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[compile]" -e tools
	@touch $(STAMP)

# The venv's bin/ first on PATH, so that `course grade ...` works as printed in JupyterLab's terminal;
# BLAS single-threaded, so that numpy's threads and course_lib's own intra-op threads do not fight over
# the cores (on a busy 2-core machine that made chapter 04's training ten times slower).
course: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/jupyter lab notebooks/00_welcome.ipynb

oracle: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0" "safetensors==0.8.0" "tabulate==0.10.0"

# the tools with their "browser" extra: Playwright, pinned (tools/pyproject.toml)
$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e "tools[browser]"
	@touch $(BROWSER_STAMP)

# what only the tests need (pyproject.toml's test extra): onnx and onnxruntime for course_lib.onnx's export
# tests, graphviz for the comparison of make_dot's own Digraph with it
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[compile,test]"
	@touch $(TEST_STAMP)

# The main suite on two workers (tests/browser is left out: pyproject.toml), then the browser test on its own.
test: $(STAMP) $(TEST_STAMP) $(BROWSER_STAMP)
	@if [ "$$COURSE_REQUIRE_ORACLE" = "1" ]; then $(MAKE) --no-print-directory oracle; fi
	$(BIN)/ruff check .
	$(THREADS) $(BIN)/python -m pytest -n 2 --dist loadfile
	$(THREADS) $(BIN)/python -m pytest tests/browser -p no:xdist

# Every notebook in JupyterLab, in headless Chromium (Debian's `chromium`, or COURSE_CHROMIUM=/path/to/chrome);
# skipped with the reason when Chromium is missing, except in CI (CI=true or COURSE_REQUIRE_ORACLE=1).
browser: $(BROWSER_STAMP)
	$(THREADS) $(BIN)/python -m pytest tests/browser -p no:xdist

bench: $(STAMP)
	$(BIN)/python bench/run.py

notebooks: $(STAMP)
	$(BIN)/course build
	$(BIN)/course make-student

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
