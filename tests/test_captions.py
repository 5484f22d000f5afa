"""The HTML report's words and tables from the code: each figure's caption is its script's docstring, each table's its
line in the tables script's docstring (one for every table the rule makes), reStructuredText-escaped; a table's
HTML twin holds its cells as text, no TeX left."""
from pathlib import Path

import pandas as pd
import pytest
from steps import step

from pipeline import captions
from pipeline.latex import escape, html_table, span, tex_to_text, write_table

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "workflow" / "scripts" / "paper"


def test_every_figure_has_its_docstring_as_caption():
    scripts = sorted((PAPER / "figures").glob("*.py"))
    assert len(scripts) >= 12
    for script in scripts:
        caption = captions.figure_caption(script)
        assert caption.replace("\\", "").split() == captions.docstring(script).split(), script.name
    assert captions.rst_escape("gpu__time_duration *x* `y` a|b") == r"gpu\_\_time\_duration \*x\* \`y\` a\|b"


def test_a_figure_script_without_a_docstring_is_refused(tmp_path):
    (tmp_path / "bare.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="no docstring"):
        captions.figure_caption(tmp_path / "bare.py")


def test_every_table_has_a_caption_in_the_tables_docstring():
    found = captions.table_captions(PAPER / "tables.py")
    assert set(found) == set(step("paper/tables").TABLES)
    assert all(c[:1].isupper() and c.endswith(".") for c in found.values())
    assert "bfloat16" in found["per_n"]                                   # a continued line is kept


@pytest.mark.parametrize("tex, text", [
    (r"$\mu$s", "\u00b5s"), (r"64$\times$64", "64\u00d764"), (r"\% cuDNN", "% cuDNN"), (r"call $-$ kernel",
                                                                                         "call \u2212 kernel"),
    ("1.0 [0.5--2.0]", "1.0 [0.5\u20132.0]"), (r"component, $N=4096$", "component, N=4096"),
    (escape(r"a_b \ 5% & #1"), r"a_b \ 5% & #1"), (r"kernel, 1000\,$\mu$s sleep", "kernel, 1000\u2009\u00b5s sleep"),
])
def test_tex_cells_become_text(tex, text):
    assert tex_to_text(tex) == text


def test_an_unknown_tex_command_is_refused_not_passed_to_the_report():
    with pytest.raises(ValueError, match="no text form"):
        tex_to_text(r"\textit{x}")


def test_a_table_is_written_as_tex_and_as_html_beside_it(tmp_path):
    df = pd.DataFrame({r"time $\mu$s": ["1.0", "<2>"], "stage": ["v1", escape("a_b")]})
    write_table(df, tmp_path / "t.tex", "rl", html=tmp_path / "t.html")
    assert r"\begin{tabular}{rl}" in (tmp_path / "t.tex").read_text()
    page = (tmp_path / "t.html").read_text()
    assert "<th>time \u00b5s</th>" in page and '<td class="r">&lt;2&gt;</td>' in page and "a_b" in page
    assert html_table(df, "rl", title="t") == page


def test_a_span_over_runs_that_agree_keeps_its_brackets():
    """A median over several runs is written with its range even where the runs agree (two runs of 23.92: not a bare
    23.9, which reads as one run's figure); only a single run's figure stands alone."""
    assert span(23.92, 23.92, 23.92, runs=2) == "23.9 [23.9, 23.9]"
    assert span(23.92, 23.92, 23.92) == "23.9 [23.9, 23.9]"
    assert span(23.92, 23.92, 23.92, runs=1) == "23.9"
    assert span(-1.0, -2.25, 0.5, 2, runs=5) == "-1.00 [-2.25, 0.50]"
