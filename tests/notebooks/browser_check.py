"""Look at a notebook's rendered outputs in a real browser (headless Chromium).

The executed notebook's outputs are laid out as a 1000 px page, one block per output, and
a script in the page measures what a reader would see; Chromium prints the DOM after the
script ran (``--dump-dom``), and the measurements are read back from it. Found:

- an output wider than the page (it would scroll or run off the right edge);
- an SVG label drawn outside its picture (clipped, as "REATE TABLE" was);
- a table cell of over 300 characters.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

PAGE_WIDTH = 1000
MAX_CELL_CHARS = 300

_MEASURE = """
<script>
const found = [];
document.querySelectorAll('.output').forEach((block, i) => {
  const where = block.dataset.where;
  if (block.scrollWidth > %(page)d) found.push(`${where}: ${block.scrollWidth} px wide`);
  block.querySelectorAll('svg').forEach(svg => {
    const box = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(t => {
      const r = t.getBoundingClientRect();
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5)
        found.push(`${where}: label "${t.textContent}" clipped`);
    });
  });
  block.querySelectorAll('td, th').forEach(td => {
    const n = td.textContent.length;
    if (n > %(cell)d) found.push(`${where}: a table cell of ${n} characters`);
  });
});
document.getElementById('measured').textContent = JSON.stringify(found);
</script>
"""


def chromium() -> str:
    """The browser's path; `.ci/run` installs Debian's chromium package."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    return path


def outputs_page(notebook: Any, title: str) -> str:
    """One HTML page with every output of the executed ``notebook``, as a reader sees it."""
    blocks = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                body = data["text/html"]
            elif "text/plain" in data or "text" in output:
                body = f"<pre>{html.escape(data.get('text/plain') or output.get('text', ''))}</pre>"
            else:
                continue
            where = html.escape(f"cell {index}", quote=True)
            blocks.append(f'<div class="output" data-where="{where}">{body}</div>')
    style = (
        f"body{{width:{PAGE_WIDTH}px;margin:0;font-family:sans-serif;font-size:13px}}"
        ".output{overflow:visible;margin:8px 0}pre{white-space:pre-wrap}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(blocks)}"
        '<pre id="measured"></pre>'
        f"{_MEASURE % {'page': PAGE_WIDTH, 'cell': MAX_CELL_CHARS}}</body></html>"
    )


def problems(page: str, work: Path) -> list[str]:
    """What the browser found wrong on ``page`` (empty: nothing)."""
    path = work / "outputs.html"
    path.write_text(page, encoding="utf-8")
    run = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={PAGE_WIDTH + 40},2000",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    match = re.search(r'<pre id="measured">(.*?)</pre>', run.stdout, re.S)
    if match is None or not match.group(1):
        raise RuntimeError(f"the page's measurements are missing: {run.stderr[-500:]}")
    found: list[str] = json.loads(html.unescape(match.group(1)))
    return found
