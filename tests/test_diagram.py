"""`gpu-platform plan --diagram`: Mermaid and SVG pictures of a stack."""

import xml.etree.ElementTree as ET

from gpu_platform import cli


def test_diagram_shows_pools_with_gpu_counts_addons_queues_and_teams(tmp_path):
    assert cli.main(["plan", "existing", "--out", str(tmp_path), "--diagram"]) == cli.EXIT_OK
    mermaid = (tmp_path / "existing" / "diagram.mmd").read_text()
    assert mermaid.startswith("flowchart LR\n")
    assert 'pool_h100_train["h100-train<br/>h100 × 8/node · 4-4 nodes · ≤32 GPUs · exclusive · infiniband"]' in mermaid
    assert 'team_research["research<br/>quota 24 GPUs"]' in mermaid
    assert "cluster --> pool_a100_infer" in mermaid
    svg = ET.fromstring((tmp_path / "existing" / "diagram.svg").read_text())
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "h100-train" in texts and "GPU pools" in texts and "Teams" in texts


def test_diagram_is_deterministic(tmp_path):
    for run in ("a", "b"):
        assert cli.main(["plan", "existing", "--out", str(tmp_path / run), "--diagram"]) == cli.EXIT_OK
    for name in ("diagram.mmd", "diagram.svg"):
        assert (tmp_path / "a" / "existing" / name).read_bytes() == (tmp_path / "b" / "existing" / name).read_bytes()
