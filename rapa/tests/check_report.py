#!/usr/bin/env python3
"""rapa/tests/check_report.py REPORT.html PROFILE.json [--partition PART.json] [--screenshot OUT.png]

Opens the HTML report of `capgnn profile` in a real headless browser (Debian's
Chromium, driven through the DevTools protocol over a pipe: no extra package) and
checks what a reader would see:
  - no console error, no uncaught exception, no failed or blocked load (the page
    must need nothing from outside);
  - every chart the profile calls for is present, rendered with a non-zero size, and
    has at least one data mark of non-zero size;
  - every number shown (tables and chart marks carry data-path and data-value) equals
    the JSON's value at that path, and the text of each table cell is that value
    formatted by the report's one display rule;
  - the summary table shows every rank.
--partition: the report came from `capgnn partition --profile PROFILE --html REPORT
--json PART.json`; its "Chosen split" section (two charts, a table row per part) is
checked against PART.json's "rapa" object (paths "split.partitions[r].KEY").
--screenshot writes a PNG of the top of the page (for the README).
Exit 0 when all hold, 1 with the failures listed, 77 when no Chromium is installed.
"""
import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    """Chromium with --remote-debugging-pipe: commands on fd 3, replies on fd 4,
    each message JSON terminated by a NUL byte."""

    def __init__(self, exe, workdir):
        r_to_chrome, w_to_chrome = os.pipe()
        r_from_chrome, w_from_chrome = os.pipe()
        # the child sees them as fds 3 (reads commands) and 4 (writes replies)
        def child_fds():
            # dup first: dup2 onto a different number clears close-on-exec, and the
            # pipe's own numbers may be 3 or 4 already
            a, b = os.dup(r_to_chrome), os.dup(w_from_chrome)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--user-data-dir=" + os.path.join(workdir, "profile"), "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, pass_fds=(3, 4))
        os.close(r_to_chrome)
        os.close(w_from_chrome)
        self.w = w_to_chrome
        self.r = r_from_chrome
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_msg(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            msg = self._read_msg(deadline)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, name, timeout=30):
        deadline = time.time() + timeout
        for e in self.events:
            if e.get("method") == name:
                return e
        while True:
            msg = self._read_msg(deadline)
            self.events.append(msg)
            if msg.get("method") == name:
                return msg

    def close(self):
        try:
            os.write(self.w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def resolve(doc, path):
    """'ranks[0].summary.mm_gflops' or 'links.matrix.latency_us[0][1]' -> value"""
    cur = doc
    for part in path.split("."):
        m = re.fullmatch(r"([A-Za-z_0-9]+)((?:\[\d+\])*)", part)
        if not m:
            raise KeyError(path)
        cur = cur[m.group(1)]
        for idx in re.findall(r"\[(\d+)\]", m.group(2)):
            cur = cur[int(idx)]
    return cur


def same(path, drawn, want):
    """The profile's numbers are drawn from the parsed JSON: equal. The split's come from
    the doubles that cJSON wrote into the partition JSON, with 15 significant digits
    when those read back within its epsilon (cJSON's print_number): equal to ~1e-15."""
    if path.startswith("split."):
        return math.isclose(drawn, want, rel_tol=1e-14, abs_tol=0.0)
    return drawn == want


def fmt_num(v):
    """the report's display rule (rapa/report.c fmt_num)"""
    if not math.isfinite(v):
        return "n/a"
    if abs(v) >= 1e4:
        return "%.0f" % v
    return "%.4g" % v


PAGE_JS = r"""
(() => {
  const charts = [...document.querySelectorAll('svg.chart')].map(s => {
    const b = s.getBoundingClientRect();
    const marks = [...s.querySelectorAll('.mark')].map(m => {
      const bb = m.getBBox();
      return {w: bb.width, h: bb.height, path: m.getAttribute('data-path'), value: m.getAttribute('data-value')};
    });
    return {id: s.id, w: b.width, h: b.height, marks};
  });
  const cells = [...document.querySelectorAll('td[data-path]')].map(td => ({
    path: td.getAttribute('data-path'), value: td.getAttribute('data-value'),
    scale: td.getAttribute('data-scale'), text: td.textContent.trim(),
    table: td.closest('table') ? td.closest('table').id : ''}));
  const summaryRows = document.querySelectorAll('#summary tr').length - 1;
  return {charts, cells, summaryRows, title: document.title};
})()
"""


def main():
    args = sys.argv[1:]
    shot = part = None
    if "--partition" in args:
        i = args.index("--partition")
        part = args[i + 1]
        del args[i:i + 2]
    if "--screenshot" in args:
        i = args.index("--screenshot")
        shot = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__)
        return 2
    html, jpath = (os.path.abspath(a) for a in args)
    exe = find_chromium()
    if not exe:
        print("skipped: no Chromium installed (scripts/install-deps.sh installs Debian's chromium)")
        return 77
    doc = json.load(open(jpath))
    if part:
        doc["split"] = json.load(open(part))["rapa"]
    fails = []
    work = tempfile.mkdtemp(prefix="capgnn-report-check.")
    b = Browser(exe, work)
    try:
        t = b.send("Target.createTarget", {"url": "about:blank"})
        sess = b.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
        for dom in ("Page", "Runtime", "Log", "Network"):
            b.send(dom + ".enable", session=sess)
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": 1240, "height": 1600, "deviceScaleFactor": 1, "mobile": False}, session=sess)
        b.events.clear()
        b.send("Page.navigate", {"url": "file://" + html}, session=sess)
        b.wait_event("Page.loadEventFired")
        time.sleep(0.3)  # let late console messages arrive
        res = b.send("Runtime.evaluate", {"expression": PAGE_JS, "returnByValue": True}, session=sess)
        page = res["result"]["value"]
        # drain events that came with the evaluation
        for e in b.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                fails.append("console %s: %s" % (p["type"], [a.get("value") for a in p.get("args", [])]))
            elif m == "Runtime.exceptionThrown":
                fails.append("uncaught exception: %s" % p.get("exceptionDetails", {}).get("text"))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                fails.append("browser log %s: %s" % (p["entry"]["level"], p["entry"].get("text")))
            elif m == "Network.loadingFailed":
                fails.append("a load failed: %s" % p.get("errorText"))
            elif m == "Network.requestWillBeSent" and not p.get("request", {}).get("url", "").startswith(("file:", "data:", "about:")):
                fails.append("the page fetched %s" % p["request"]["url"])
        if shot:
            img = b.send("Page.captureScreenshot", {"format": "png", "clip": {"x": 0, "y": 0, "width": 1240,
                                                                               "height": 1500, "scale": 0.75}},
                         session=sess)
            with open(shot, "wb") as f:
                f.write(base64.b64decode(img["data"]))
    finally:
        b.close()
        shutil.rmtree(work, ignore_errors=True)

    n = len(doc["ranks"])
    expected = ["chart-mm", "chart-spmm", "chart-h2d", "chart-d2h", "chart-idt", "chart-cap",
                "curve-h2d", "curve-d2h", "curve-idt"]
    if n > 1:
        expected += ["curve-links", "heat-bw", "heat-lat"]
    if part:
        expected += ["chart-split-share", "chart-split-time"]
        for r in range(len(doc["split"]["partitions"])):
            for k in ("capability", "target", "share", "predicted_compute_s", "predicted_comm_s",
                      "predicted_lambda_s", "memory_bytes"):
                if not any(c["path"] == f"split.partitions[{r}].{k}" for c in page["cells"]):
                    fails.append(f"split table lacks split.partitions[{r}].{k}")
    charts = {c["id"]: c for c in page["charts"]}
    for cid in expected:
        c = charts.get(cid)
        if not c:
            fails.append(f"chart {cid} is missing")
            continue
        if not (c["w"] > 0 and c["h"] > 0):
            fails.append(f"chart {cid} is not rendered ({c['w']} x {c['h']})")
        drawn = [m for m in c["marks"] if m["w"] > 0 and m["h"] > 0]
        if not drawn:
            fails.append(f"chart {cid} is empty (no data mark of non-zero size)")
    nvals = 0
    for c in page["charts"]:
        for m in c["marks"]:
            if not m["path"]:
                fails.append(f"chart {c['id']}: a mark without data-path")
                continue
            want = resolve(doc, m["path"])
            if not same(m["path"], float(m["value"]), want):
                fails.append(f"chart {c['id']}: {m['path']} drawn as {m['value']}, JSON has {want!r}")
            nvals += 1
    for cell in page["cells"]:
        want = resolve(doc, cell["path"])
        if not same(cell["path"], float(cell["value"]), want):
            fails.append(f"table {cell['table']}: {cell['path']} = {cell['value']}, JSON has {want!r}")
        shown = fmt_num(want * (float(cell["scale"]) if cell["scale"] else 1.0))
        if cell["text"] != shown:
            fails.append(f"table {cell['table']}: {cell['path']} shows '{cell['text']}', expected '{shown}'")
        nvals += 1
    if page["summaryRows"] != n:
        fails.append(f"summary table has {page['summaryRows']} rows for {n} ranks")
    for r in range(n):
        for f in ("mm_gflops", "spmm_gbs", "h2d_gbs", "d2h_gbs", "idt_gbs"):
            if not any(c["path"] == f"ranks[{r}].summary.{f}" for c in page["cells"]):
                fails.append(f"summary table lacks ranks[{r}].summary.{f}")
    if fails:
        print("FAIL: the report in a headless browser (%s):" % exe)
        for f in fails:
            print("  " + f)
        return 1
    print(f"ok: {len(page['charts'])} charts, {nvals} numbers equal to the JSON's, no console error ({exe})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
