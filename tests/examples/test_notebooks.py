"""Every notebook under examples/ runs top to bottom in a fresh kernel (nbclient), as a
user would run it, and says what it promises."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


def execute(path: Path, workdir: Path) -> nbformat.NotebookNode:
    shutil.copy(path, workdir / path.name)
    notebook = nbformat.read(workdir / path.name, as_version=4)
    # The kernel talks to this process over 127.0.0.1 (jupyter_client's default): loopback only.
    client = NotebookClient(notebook, kernel_name="python3", timeout=600,
                            resources={"metadata": {"path": str(workdir)}})  # fmt: skip
    client.execute()
    return notebook


def text_of(notebook: nbformat.NotebookNode) -> str:
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.append(str(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def test_there_is_a_notebook_and_it_is_stored_without_outputs() -> None:
    assert NOTEBOOKS
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_runs_and_keeps_its_promises(path: Path, tmp_path: Path) -> None:
    notebook = execute(path, tmp_path)
    text = text_of(notebook)
    if path.name == "custom-abr-rule.ipynb":
        assert 'SafetyBuffer{"low_s": 10}' in text  # the component, as the store has it
        assert "bitrate falls as the safety buffer grows: True" in text
        assert (tmp_path / "safety-buffer.png").stat().st_size > 1000
        assert len(list((tmp_path / "notebook-results").rglob("*.parquet"))) >= 15
