from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from qoslab import plots
from qoslab.cli import main
from qoslab.report import Report, run_report
from vizdata import POLICE, ROOT, police, scenario

ARTIFACTS = ROOT / "test-artifacts"


def _report(tmp_path: Path) -> Path:
    text = scenario(POLICE) + "# <tag> & 'quotes'\n"
    return run_report(police(), text).write(tmp_path / "report.html")


def test_report_is_self_contained_with_every_figure(tmp_path):
    html = _report(tmp_path).read_text(encoding="utf-8")
    names = re.findall(r'data-figure="([^"]+)"', html)
    assert names == list(plots.figures(police()))
    # nothing is fetched: every src/href is a data: URI or a fragment
    for attr in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert attr.startswith("data:"), attr
    assert "<script" not in html and "@import" not in html and "url(" not in html
    assert "# &lt;tag&gt; &amp; &#39;quotes&#39;" in html  # the scenario, escaped (Jinja2)
    jain = police().summary["jain_fairness"]
    assert f"Jain {jain:.3f}" in html and "r1-&gt;r2 egress" in html
    assert "matplotlib" in html and "qoslab" in html and "jinja2" in html  # versions
    # every figure is a PNG drawn once (no per-sample SVG)
    assert html.count("data:image/png;base64,") == len(names)
    assert "image/svg" not in html


def test_report_table_escapes_and_classes():
    rep = Report("t <1>").table(["a", "b"], [["<x>", 1.5], ["y", None]], row_classes=["ok", ""])
    html = rep.html()
    assert "<title>t &lt;1&gt;</title>" in html
    assert '<tr class="ok"><td class=l>&lt;x&gt;</td><td>1.5</td></tr>' in html
    assert "<tr><td class=l>y</td><td></td></tr>" in html


def test_report_figure_count_and_pngs_written_from_the_same_bytes(tmp_path):
    import base64

    rep = run_report(police(), scenario(POLICE))
    html = rep.html()
    names = re.findall(r'data-figure="([^"]+)"', html)
    assert len(names) == len(rep.pngs) == len(plots.figures(police()))
    paths = rep.write_figures(tmp_path / "figs")
    assert sorted(p.name for p in paths) == sorted(f"{n}.png" for n in names)
    for name, data in re.findall(
        r'data-figure="([^"]+)"><img alt="[^"]*" src="data:image/png;base64,([^"]+)"', html
    ):
        assert (tmp_path / "figs" / f"{name}.png").read_bytes() == base64.b64decode(data)


def test_figures_are_drawn_once_per_report(monkeypatch, tmp_path):
    """`compare --report --figures` draws each figure once: the files are the
    report's PNG bytes."""
    from matplotlib.figure import Figure

    drawn: list[int] = []
    real = Figure.savefig

    def counting(self, *a, **k):
        drawn.append(id(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", counting)
    monkeypatch.setattr(plots, "render_jobs", lambda: 1)  # count in this process
    a = tmp_path / "a.toml"
    b = tmp_path / "b.toml"
    a.write_text(scenario(POLICE, duration="1s"))
    b.write_text(scenario(POLICE, duration="1s").replace("viz-police", "viz-police-b"))
    html = tmp_path / "c.html"
    assert (
        main(["compare", str(a), str(b), "--report", str(html), "--figures", str(tmp_path / "f")])
        == 0
    )
    assert len(drawn) == len(set(drawn)) == len(list((tmp_path / "f").glob("*.png")))
    assert len(re.findall(r'data-figure="', html.read_text())) == len(drawn)


def test_policy_tree_report_has_the_class_table_and_figure(tmp_path):
    import qoslab

    r = qoslab.simulate(ROOT / "scenarios/trees/linux-htb-bfifo.toml")
    html = run_report(r, "x").html()
    assert 'data-figure="classes"' in html and "Policy tree classes" in html
    for p in r.summary["policies"]:
        for c in p["classes"]:
            assert f"<td class=l>{c['name']}</td>" in html


def test_run_report_flag(tmp_path, capsys):
    scen = tmp_path / "s.toml"
    scen.write_text(scenario(POLICE, '["goodput", "rtt"]', "1s"))
    out = tmp_path / "out"
    assert main(["run", str(scen), "--out", str(out), "--report", "--quiet"]) == 0
    html = (out / "report.html").read_text()
    assert re.findall(r'data-figure="([^"]+)"', html) == [
        "io_graph",
        "rtt",
        "rtt_cdf",
        "goodput_cdf",
    ]
    assert "image/svg" not in html
    assert (out / "results.json").exists()
    explicit = tmp_path / "r.html"
    assert main(["run", str(scen), "--report", str(explicit)]) == 0
    assert explicit.exists() and f"wrote {explicit}" in capsys.readouterr().out


def _browser():
    """Selenium driving Debian's chromium; a missing browser fails the test
    (CI must run it) unless QOSLAB_NO_BROWSER=1 says to skip."""
    missing = [b for b in ("chromium", "chromedriver") if shutil.which(b) is None]
    if missing:
        msg = f"{' and '.join(missing)} not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("QOSLAB_NO_BROWSER") == "1":
            pytest.skip(msg)
        pytest.fail(msg + "; set QOSLAB_NO_BROWSER=1 to skip outside CI")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,900",
    ):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def test_report_renders_in_headless_chromium(tmp_path):
    path = _report(tmp_path)
    driver = _browser()
    try:
        driver.get(path.as_uri())
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert errors == []
        figs = driver.execute_script(
            "return Array.from(document.querySelectorAll('figure[data-figure]')).map("
            "f => [f.dataset.figure, f.querySelector('img').complete,"
            " f.querySelector('img').naturalWidth])"
        )
        assert [f[0] for f in figs] == list(plots.figures(police()))
        for name, complete, width in figs:
            assert complete and width > 100, name
        entries = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert [e for e in entries if not e.startswith("data:")] == []
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(int(height) + 100, 16000))
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "report.png"
        assert driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()


def test_forked_rendering_draws_the_same_figures_as_one_process():
    serial = plots.render(police(), jobs=1)
    forked = plots.render(police(), jobs=2)
    assert list(forked) == list(serial) == list(plots.figures(police()))
    assert forked == serial  # byte for byte


@pytest.mark.parametrize(
    ("case", "jobs", "drawer"),
    [
        ("scenarios/isr4000-police.toml", 1, "0"),
        ("scenarios/isr4000-police.toml", 2, "0"),
        ("scenarios/isr4000-police.toml", 1, "1"),
        ("scenarios/trees/linux-htb-bfifo.toml", 1, "1"),
    ],
)
def test_run_report_never_imports_pandas(tmp_path, case, jobs, drawer):
    """`qoslab run --report` draws its figures from the NumPy series: pandas
    (0.4-0.9 s of a report) is blocked in a fresh interpreter, so an import of
    it in this process or in a forked figure process fails the report. With
    the figure processes started at the command's beginning (qoslab.cli._drawer,
    QOSLAB_DRAWER=1) or drawn after the run (``jobs`` processes)."""
    import json
    import subprocess
    import sys
    import textwrap

    out = tmp_path / "r.html"
    code = f"""
        import json, sys
        sys.modules["pandas"] = None  # `import pandas` raises ImportError, also after a fork
        from qoslab import plots
        plots.render_jobs = lambda: {jobs}
        from qoslab.cli import main
        rc = main(["run", {case!r}, "--report", {str(out)!r}, "--quiet"])
        print(json.dumps([rc, sys.modules.get("pandas") is not None]))
    """
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "QOSLAB_DRAWER": drawer},
    )
    assert p.returncode == 0, p.stderr
    rc, imported = json.loads(p.stdout.strip().splitlines()[-1])
    assert rc == 0, p.stderr
    assert not imported
    html = out.read_text(encoding="utf-8")
    assert len(re.findall(r'data-figure="([^"]+)"', html)) >= 4
