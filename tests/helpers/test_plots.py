import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from transformer_course.plots import attention_heads, attention_heatmap, curves, mask_heatmap, show


def test_heatmap_labels_rows_as_queries_and_columns_as_keys():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    ax = attention_heatmap(weights, ["a", "b", "c"], ["w", "x", "y", "z"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    assert len(ax.texts) == 12
    plt.close(ax.figure)


def test_heatmap_rejects_labels_that_do_not_match_the_weights():
    with pytest.raises(ValueError, match=r"expected a matrix of shape \(2, 2\)"):
        attention_heatmap(torch.eye(3), ["a", "b"], ["a", "b"])


def test_curves_draws_one_line_per_series_and_rejects_mismatched_lengths():
    ax = curves([1, 2, 4], {"a": [1, 2, 3], "b": [3, 2, 1]}, "x", "y", log_x=True)
    assert len(ax.get_lines()) == 2 and ax.get_xscale() == "log"
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="has 2 values for 3 x values"):
        curves([1, 2, 3], {"a": [1, 2]}, "x", "y")


def test_attention_heads_draws_one_heatmap_per_head_with_its_title():
    weights = torch.softmax(torch.randn(3, 2, 4), dim=-1)
    fig = attention_heads(weights, ["a", "b"], ["w", "x", "y", "z"], titles=["one", "two", "three"])
    heatmaps = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in heatmaps] == ["one", "two", "three"]
    plt.close(fig)


def test_mask_heatmap_marks_allowed_cells_and_checks_the_shape():
    ax = mask_heatmap(torch.ones(3, 3, dtype=torch.bool).tril(), list("abc"), list("abc"))
    assert [text.get_text() for text in ax.texts].count("✓") == 6
    plt.close(ax.figure)
    with pytest.raises(ValueError, match=r"expected a matrix of shape \(2, 3\)"):
        mask_heatmap(torch.ones(3, 3, dtype=torch.bool), list("ab"), list("abc"))


def test_heatmap_of_a_long_sentence_can_leave_out_the_values():
    ax = attention_heatmap(torch.softmax(torch.randn(3, 4), dim=-1), list("abc"), list("wxyz"), annotate=False)
    assert len(ax.texts) == 0
    plt.close(ax.figure)


def test_show_closes_the_figures_undrawn_while_nbgrader_grades_and_shows_them_otherwise(monkeypatch):
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.get_fignums()))
    plt.figure()
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    show()
    assert len(shown) == 1 and shown[0]
    monkeypatch.setenv("NBGRADER_EXECUTION", "1")
    show()
    assert len(shown) == 1 and plt.get_fignums() == []


def test_notebooks_show_figures_and_ask_whether_they_are_graded_through_the_package():
    """plots.show() closes figures undrawn while nbgrader grades, and QUICK says when that is: no notebook calls
    plt.show() or reads nbgrader's variable itself."""
    import json
    from pathlib import Path

    solutions = Path(__file__).resolve().parents[2] / "solutions"
    for notebook in sorted(solutions.glob("*/*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        assert "plt.show()" not in text, f"{notebook.name}: use transformer_course.plots.show()"
        assert "NBGRADER_EXECUTION" not in text, f"{notebook.name}: use transformer_course.QUICK"
