"""JupyterLab in a real browser: start the server, open notebooks in headless Chromium, Run All, read back.

Cell state (execution counts, outputs) is read from JupyterLab's own notebook model through
``window.jupyterapp`` (the server is started with ``expose_app_in_browser``), never from the DOM, which
holds only the cells near the viewport. The DOM is read for what only it shows: that a figure is an image
that loaded and that a widget rendered. Every wait is for a condition, with a deadline.
"""
from __future__ import annotations

import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

#: the folder of the Python running the tests: JupyterLab and its kernel come from this environment
BIN = Path(sys.executable).parent
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml")

# ---------------------------------------------------------------------------------------------- JavaScript

OPEN = """async (path) => {
  const app = window.jupyterapp;
  await app.restored;
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  window.__panel = panel;
  window.__sent = 0;
  window.__replied = 0;
  window.__commSent = new Set();
  window.__commDone = new Set();
  panel.sessionContext.session.kernel.anyMessage.connect((_, m) => {
    const type = m.msg.header.msg_type;
    if (m.direction === 'send' && type === 'execute_request') { window.__sent += 1; }
    if (m.direction === 'recv' && type === 'execute_reply') { window.__replied += 1; }
    // a widget's change goes to the kernel as a comm message; the kernel's idle status for it comes after
    // every output the change caused (one iopub channel, in order)
    if (m.direction === 'send' && type === 'comm_msg') { window.__commSent.add(m.msg.header.msg_id); }
    if (m.direction === 'recv' && type === 'status' && m.msg.content.execution_state === 'idle'
        && m.msg.parent_header && window.__commSent.has(m.msg.parent_header.msg_id)) {
      window.__commDone.add(m.msg.parent_header.msg_id);
    }
  });
  return panel.content.widgets.length;
}"""

RUN_ALL = """() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }"""

#: true once every code cell's execute request has its reply and the kernel is idle. (Cell states are not
#: enough: after the first error reply JupyterLab marks the queued cells idle, while the kernel goes on
#: with those tagged raises-exception. A request the kernel aborts gets a reply too.)
RAN_ALL = """() => {
  const p = window.__panel;
  const code = p.content.widgets.filter(c => c.model.type === 'code' && c.model.sharedModel.getSource().trim());
  return window.__sent >= code.length && window.__replied === window.__sent
         && p.sessionContext.kernelDisplayStatus === 'idle';
}"""

#: the notebook model: per cell its id, tags, execution count and outputs (without the image bytes)
CELLS = """() => window.__panel.content.widgets.map((c, index) => {
  const m = c.model;
  const code = m.type === 'code';
  return {index, id: m.id, type: m.type, tags: m.getMetadata('tags') || [],
          count: code ? m.executionCount : null,
          outputs: code ? m.outputs.toJSON().map(o => ({
            output_type: o.output_type, ename: o.ename || null, evalue: o.evalue || null,
            mimes: Object.keys(o.data || {}),
            text: [].concat(o.text || (o.data && o.data['text/plain']) || []).join('')})) : []};
})"""

#: scroll a cell into view (JupyterLab renders cells near the viewport) and return its node
SCROLL_TO = """async (index) => {
  const nb = window.__panel.content;
  const cell = nb.widgets[index];
  if (typeof nb.scrollToItem === 'function') { await nb.scrollToItem(index, 'center'); }
  cell.node.scrollIntoView({block: 'center'});
  return cell.node;
}"""

#: what a cell's output area shows: images and whether they loaded, widget views, placeholder text
SHOWN = """(index) => {
  const node = window.__panel.content.widgets[index].outputArea.node;
  const imgs = [...node.querySelectorAll('img')];
  const text = node.innerText;
  return {images: imgs.length, loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
          widgets: node.querySelectorAll('.jupyter-widgets').length,
          loading: /Loading widget|Error displaying widget|model not found/.test(text),
          text_repr: /\\b(VBox|HBox|IntSlider|Dropdown|Output)\\((children|value|layout|outputs)=/.test(text),
          text: text.slice(0, 400)};
}"""

CLOSE = """async () => {
  const p = window.__panel;
  if (!p) { return; }
  await p.context.save();  // the notebook as it ran, kept with the screenshots
  await p.sessionContext.shutdown();
  p.dispose();
  window.__panel = undefined;
}"""


def shown_ready(expect_images: int, expect_widgets: int) -> str:
    """A wait_for_function body: the cell's output area shows what its model holds (figures loaded)."""
    return f"""(index) => {{
      const s = ({SHOWN})(index);
      const ok = s.images >= {expect_images} && s.loaded === s.images
                 && ({expect_widgets} === 0 || (s.widgets > 0 && !s.loading && !s.text_repr));
      return ok ? s : false;
    }}"""


# ---------------------------------------------------------------------------------------------- results


@dataclass
class Interaction:
    """What a widget showed before and after the test changed it, and where the screenshots are."""

    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    screenshots: list = field(default_factory=list)
    error: str | None = None


@dataclass
class NotebookRun:
    """One notebook after Run All in JupyterLab."""

    path: str
    cells: list = field(default_factory=list)
    shown: dict = field(default_factory=dict)  # cell index -> SHOWN of a cell with figures or widgets
    console: list = field(default_factory=list)  # browser console errors and uncaught page errors
    interaction: Interaction | None = None
    error: str | None = None  # the harness could not finish (a timeout, a crash)
    seconds: float = 0.0

    def code_cells(self) -> list:
        return [c for c in self.cells if c["type"] == "code"]


# ---------------------------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the server's process before it starts: on Linux, end it when the test process ends, however it ends."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class LabServer:
    """``jupyter lab`` of this environment on 127.0.0.1, a free port, no token, over a folder of its own."""

    def __init__(self, root: Path, log: Path):
        self.root, self.log, self.port = root, log, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        home = root / ".jupyter-home"
        self.env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                    # as `make course` starts it: BLAS single-threaded
                    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                    # nothing of the user's Jupyter setup, nothing left behind
                    "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
                    "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
                    "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
        self.cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
                    "--ServerApp.port_retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
                    f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            self.cmd.append("--allow-root")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        settings = Path(self.env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        # no "Would you like to get notified about official Jupyter news?" over the notebook
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(self.cmd, env=self.env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}; its log: {self.log}")
            try:
                with urllib.request.urlopen(self.url + "/api/status", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not answer in {timeout:.0f} s; its log: {self.log}")
            # polling the server's status until it answers (it starts in seconds)
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def find_chromium() -> str | None:
    """Chromium's executable: $COURSE_CHROMIUM if it is one, else Debian's ``chromium`` (or another name on PATH)."""
    given = os.environ.get("COURSE_CHROMIUM")
    if given:
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


# ---------------------------------------------------------------------------------------------- lanes


class Lane:
    """One headless Chromium with one JupyterLab page, running notebooks one after the other."""

    def __init__(self, chromium: str, url: str, shots: Path, name: str):
        self.chromium, self.url, self.shots, self.name = chromium, url, shots, name
        self.current: NotebookRun | None = None

    def _on_console(self, msg) -> None:
        if msg.type == "error" and self.current is not None:
            self.current.console.append(f"console.error: {msg.text}")

    def _on_pageerror(self, err) -> None:
        if self.current is not None:
            self.current.console.append(f"uncaught: {err}")

    def run(self, jobs: queue.Queue, results: dict, interactions: dict, timeout: float) -> None:
        from playwright.sync_api import sync_playwright

        args = ["--disable-dev-shm-usage", "--disable-gpu"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root inside its sandbox
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=self.chromium, headless=True, args=args)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", self._on_console)
            page.on("pageerror", self._on_pageerror)
            page.goto(self.url + "/lab?reset", timeout=120_000)
            page.wait_for_function("() => window.jupyterapp !== undefined", timeout=120_000)
            while True:
                try:
                    path = jobs.get_nowait()
                except queue.Empty:
                    break
                results[path] = self.run_notebook(page, path, interactions.get(path), timeout)
            browser.close()

    def run_notebook(self, page, path: str, interact, timeout: float) -> NotebookRun:
        run = NotebookRun(path)
        self.current = run
        start = time.monotonic()
        try:
            page.evaluate(OPEN, path)
            page.evaluate(RUN_ALL)
            page.wait_for_function(RAN_ALL, timeout=timeout * 1000, polling=250)
            run.cells = page.evaluate(CELLS)
            for cell in run.code_cells():
                images = sum(any(m in o["mimes"] for m in IMAGE_MIMES) for o in cell["outputs"])
                widgets = sum(WIDGET_MIME in o["mimes"] for o in cell["outputs"])
                if images or widgets:
                    page.evaluate(SCROLL_TO, cell["index"])
                    try:
                        page.wait_for_function(shown_ready(images, widgets), arg=cell["index"], timeout=30_000)
                    except Exception:  # what it shows at the deadline is in `shown`, for the test to report
                        pass
                    run.shown[cell["index"]] = page.evaluate(SHOWN, cell["index"])
            if interact is not None:
                run.interaction = Interaction()
                try:
                    interact(page, run, self.shots)
                except Exception as e:  # reported by the interaction's test, with the screenshots taken
                    run.interaction.error = f"{type(e).__name__}: {e}"
        except Exception as e:
            run.error = f"{type(e).__name__}: {e}"
            try:
                run.cells = run.cells or page.evaluate(CELLS)
                page.screenshot(path=str(self.shots / f"{Path(path).stem}.{Path(path).parent.name}.failed.png"))
            except Exception:  # a page that crashed: the error above says what happened
                pass
        finally:
            try:
                page.evaluate(CLOSE)
            except Exception as e:
                run.error = run.error or f"closing the notebook failed: {e}"
            self.current = None
            run.seconds = time.monotonic() - start
        return run


def run_notebooks(chromium: str, url: str, paths: list, shots: Path, interactions: dict, lanes: int = 2,
                  timeout: float = 600) -> dict:
    """Run All on each notebook (paths relative to the server's root), `lanes` browsers at a time.

    ``interactions`` maps a path to ``f(page, run, shots)``, called after its Run All with the notebook open.
    Returns path -> :class:`NotebookRun`.
    """
    jobs: queue.Queue = queue.Queue()
    for p in paths:
        jobs.put(p)
    results: dict = {}
    errors: list = []

    def lane(k: int) -> None:
        try:
            Lane(chromium, url, shots, f"lane{k}").run(jobs, results, interactions, timeout)
        except Exception as e:  # a browser that would not start: every notebook it did not run says why
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=lane, args=(k,), daemon=True) for k in range(max(1, lanes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in paths:
        if p not in results:
            results[p] = NotebookRun(p, error="not run: " + ("; ".join(errors) or "no browser took it"))
    return results


# ---------------------------------------------------------------------------------------------- interactions

#: a widget's figure (the image in its Output), its status lines and its sliders' readouts
WIDGET_STATE = """(node) => ({
  figure: (node.querySelector('.widget-output img') || {}).src || null,
  figures: node.querySelectorAll('.widget-output img').length,
  status: [...node.querySelectorAll('.widget-html-content')].map(e => e.innerText).join(' | '),
  sliders: Object.fromEntries([...node.querySelectorAll('.widget-slider')].map(s => [
    (s.querySelector('.widget-label') || {}).innerText || '',
    (s.querySelector('.widget-readout') || {}).innerText || ''])),
})"""

#: how many widget messages the browser has sent to the kernel so far
COMM_SENT = "() => window.__commSent.size"

#: wait: the kernel has handled every widget message since `sent` (and there was one), the figure is a loaded
#: image other than `before`, and the status and the slider named say what is wanted
CHANGED = """([node, sent, before, status, slider, value]) => {
  const settled = window.__commSent.size > sent && [...window.__commSent].every(id => window.__commDone.has(id));
  const s = (%s)(node);
  const img = node.querySelector('.widget-output img');
  return settled && s.figure !== null && s.figure !== before && img.complete && img.naturalWidth > 0
    && s.status.includes(status) && (slider === '' || s.sliders[slider] === value);
}""" % WIDGET_STATE


def change(page, node, act, status: str = "", slider: str = "", value: str = "") -> dict:
    """Do `act()` to a widget, wait until the kernel has handled it and the figure changed; the new state."""
    sent = page.evaluate(COMM_SENT)
    before = page.evaluate(WIDGET_STATE, node)["figure"]
    act()
    page.wait_for_function(CHANGED, arg=[node, sent, before, status, slider, value], timeout=30_000)
    return widget_state(page, node)


def cell_index(run: NotebookRun, cell_id: str) -> int:
    return next(c["index"] for c in run.cells if c["id"] == cell_id)


def widget_state(page, node) -> dict:
    """WIDGET_STATE with the figure's bytes replaced by a short digest (two states compare by it)."""
    import hashlib

    state = page.evaluate(WIDGET_STATE, node)
    state["figure"] = hashlib.sha1(state["figure"].encode()).hexdigest()[:12] if state["figure"] else None
    return state


def _shoot(node, shots: Path, name: str, run: NotebookRun) -> None:
    path = shots / name
    node.screenshot(path=str(path))
    run.interaction.screenshots.append(path)


def _slider(node, label: str):
    for s in node.query_selector_all(".widget-slider"):
        lab = s.query_selector(".widget-label")
        if lab is not None and lab.inner_text().strip() == label:
            return s
    raise LookupError(f"no slider labelled {label!r}")


#: the stride explorer's preset the test picks, and the call its status line must then show
EXPLORER_PRESET = ("diagonal: x.diagonal()", "storage.as_strided((3,), (5,), 0)")
#: the offset that puts the diagonal's last cell past the 12-element storage, and the status it must show
EXPLORER_OFFSET = ("2", "need a storage of 13 elements, but it has 12: as_strided would raise")


def explore_strides(page, run: NotebookRun, shots: Path) -> None:
    """Chapter 02's stride explorer: pick a preset, then type an offset too large for the storage."""
    it = run.interaction
    node = page.evaluate_handle(SCROLL_TO, cell_index(run, "explorer")).as_element()
    box = node.query_selector(".widget-vbox")
    it.before = widget_state(page, box)
    _shoot(box, shots, "02_stride_explorer.1_before.png", run)
    dropdown = box.query_selector(".widget-dropdown select")
    it.after["preset"] = change(page, box, lambda: dropdown.select_option(label=EXPLORER_PRESET[0]),
                                status=EXPLORER_PRESET[1])
    _shoot(box, shots, "02_stride_explorer.2_after_preset.png", run)
    readout = _slider(box, "offset").query_selector(".widget-readout")

    def type_offset():
        readout.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(EXPLORER_OFFSET[0])
        page.keyboard.press("Enter")

    it.after["offset"] = change(page, box, type_offset, status=EXPLORER_OFFSET[1], slider="offset",
                                value=EXPLORER_OFFSET[0])
    _shoot(box, shots, "02_stride_explorer.3_after_offset.png", run)


#: how many steps the test moves chapter 03's backward stepper (by keyboard, one arrow key a step)
STEPPER_STEPS = 2


def step_backward(page, run: NotebookRun, shots: Path) -> None:
    """Chapter 03's backward stepper: move its slider step by step with the arrow key."""
    it = run.interaction
    node = page.evaluate_handle(SCROLL_TO, cell_index(run, "topo-order-picture")).as_element()
    box = node.query_selector(".widget-vbox")
    it.before = widget_state(page, box)
    handle = box.query_selector(".widget-slider .noUi-handle")
    it.before["max"] = handle.get_attribute("aria-valuemax")
    _shoot(box, shots, "03_backward_stepper.0_steps.png", run)
    handle.focus()
    for k in range(1, STEPPER_STEPS + 1):
        it.after[k] = change(page, box, lambda: page.keyboard.press("ArrowRight"), slider="steps run", value=str(k))
        it.after[k]["now"] = handle.get_attribute("aria-valuenow")
        _shoot(box, shots, f"03_backward_stepper.{k}_steps.png", run)


INTERACTIONS = {"solutions/02_strides_and_views.ipynb": explore_strides,
                "solutions/03_autograd.ipynb": step_backward}
