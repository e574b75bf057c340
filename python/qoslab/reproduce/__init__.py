"""``qoslab reproduce``: run the published experiments and print ours
beside theirs.

- :mod:`.model` - published values (read from ``qoslab/data/reference``,
  each with its location in the source), cases, assumptions, rows;
- :mod:`.checks` - what a checker records per run, and the verdict rules
  over seeds and assumption ranges;
- one module per source: :mod:`.packetlife`, :mod:`.isr4000`,
  :mod:`.rfc2963`, :mod:`.linux_tbf_htb`;
- :mod:`.registry` - the experiments and running one;
- :mod:`.render` - text, JSON, HTML, Markdown; :mod:`.command` - the CLI.
"""

from __future__ import annotations

from qoslab.reproduce.checks import RULES
from qoslab.reproduce.command import main, run_all
from qoslab.reproduce.model import Assumption, Case, Experiment, Reference, Row, data_dir, tomllib
from qoslab.reproduce.registry import (
    DEFAULT_SEEDS,
    EXPERIMENTS,
    Reproduction,
    reproduce,
    scenario_text,
    variants,
)
from qoslab.reproduce.render import (
    check_markdown_path,
    markdown,
    markdown_figures_dir,
    render_text,
    report,
    summary_line,
    write_markdown,
)

__all__ = [
    "DEFAULT_SEEDS",
    "EXPERIMENTS",
    "RULES",
    "Assumption",
    "Case",
    "Experiment",
    "Reference",
    "Reproduction",
    "Row",
    "check_markdown_path",
    "data_dir",
    "main",
    "markdown",
    "markdown_figures_dir",
    "render_text",
    "report",
    "reproduce",
    "run_all",
    "scenario_text",
    "summary_line",
    "tomllib",
    "variants",
    "write_markdown",
]
