"""Every bad configuration of issue 2 fails `gpu-platform plan` with one line naming the path: no traceback,
no plan.json."""

import pytest
import yaml

from gpu_platform import cli

BASE_POOL = {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2}


def stack_file(tmp_path, config, stack="bad"):
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in config.items()}}))
    return path


def aws(**changes):
    config = {"cloud": "aws", "region": "us-west-2", "nodePools": [dict(BASE_POOL)]}
    config.update(changes)
    return config


def with_pool(**fields):
    return aws(nodePools=[{**BASE_POOL, **fields}])


CASES = [
    ("unknown cloud", {"cloud": "ibm", "region": "x", "nodePools": [BASE_POOL]},
     "bad: cloud: 'ibm' is not one of aws, azure, gcp, oci, existing"),
    ("misspelt instance type", with_pool(instanceType="p5.48xlarg"),
     "bad: nodePools[0].instanceType: unknown AWS GPU instance type 'p5.48xlarg'; did you mean 'p5.48xlarge'?"),
    ("rdma on a shape without RDMA", with_pool(rdma=True),
     "bad: nodePools[0].rdma: 'g6.xlarge' has no RDMA fabric; RDMA-capable AWS shapes: g4dn.metal, g5.48xlarge, "
     "g6.48xlarge, g6e.48xlarge, p4d.24xlarge, p4de.24xlarge, p5.48xlarge, p5e.48xlarge, p5en.48xlarge, "
     "p6-b200.48xlarge, trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge"),
    ("minNodes > maxNodes", with_pool(minNodes=3, maxNodes=2),
     "bad: nodePools[0].minNodes: minNodes (3) is greater than maxNodes (2)"),
    ("maxNodes 0", with_pool(maxNodes=0), "bad: nodePools[0].maxNodes: must be >= 1, got 0"),
    ("mig on a GPU without MIG", with_pool(sharing={"mode": "mig", "profile": "1g.10gb"}),
     "bad: nodePools[0].sharing.mode: mig needs a MIG-capable GPU; NVIDIA L4 on 'g6.xlarge' has no MIG"),
    ("unknown sharing mode", with_pool(sharing={"mode": "timeslicing"}),
     "bad: nodePools[0].sharing.mode: 'timeslicing' is not one of exclusive, time-slicing, mps, mig, hami; "
     "did you mean 'time-slicing'?"),
    ("time-slicing replicas 1", with_pool(sharing={"mode": "time-slicing", "replicas": 1}),
     "bad: nodePools[0].sharing.replicas: time-slicing needs at least 2 replicas per GPU, got 1"),
    ("duplicate pool names", aws(nodePools=[BASE_POOL, {**BASE_POOL, "instanceType": "g6.2xlarge"}]),
     "bad: nodePools[1].name: duplicate pool name 'infer' (also nodePools[0])"),
    ("pool name not a DNS label", with_pool(name="GPU_Pool"),
     "bad: nodePools[0].name: 'GPU_Pool' is not a DNS label (lower-case letters, digits and '-', starting and "
     "ending with a letter or digit, at most 63 characters)"),
    ("non-integer minNodes", with_pool(minNodes="two"), "bad: nodePools[0].minNodes: must be an integer, got 'two'"),
    ("negative gpuQuota", aws(teams=[{"name": "research", "gpuQuota": -1}]),
     "bad: teams[0].gpuQuota: must be >= 0, got -1"),
    ("duplicate team names", aws(teams=[{"name": "research", "gpuQuota": 1}, {"name": "research", "gpuQuota": 2}]),
     "bad: teams[1].name: duplicate team name 'research' (also teams[0])"),
    ("instance type of another cloud", with_pool(instanceType="Standard_ND96isr_H100_v5"),
     "bad: nodePools[0].instanceType: 'Standard_ND96isr_H100_v5' is an instance type of Azure, not of AWS"),
    ("missing nodePools", {"cloud": "aws", "region": "us-west-2"}, "bad: nodePools: is required"),
    ("missing region", {"cloud": "aws", "nodePools": [BASE_POOL]}, "bad: region: is required"),
    ("unknown gpuSoftware", aws(gpuSoftware="gpu-operator"),
     "bad: gpuSoftware: 'gpu-operator' is not one of operator, device-plugin, cloud-managed; "
     "did you mean 'operator'?"),
]


@pytest.mark.parametrize(("case", "config", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_configuration_fails_with_one_line_and_writes_nothing(tmp_path, capsys, case, config, message):
    out = tmp_path / "out"
    code = cli.main(["plan", "--config", str(stack_file(tmp_path, config)), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == cli.EXIT_CONFIG
    assert captured.err == f"error: {message}\n"
    assert "Traceback" not in captured.out + captured.err
    assert not (out / "bad" / "plan.json").exists()


def test_one_bad_stack_among_good_ones_writes_no_plan_at_all(tmp_path, capsys):
    good = stack_file(tmp_path, aws(), stack="good")
    bad = stack_file(tmp_path, with_pool(maxNodes=0), stack="bad")
    for path in (good, bad):
        assert path.exists()
    out = tmp_path / "out"
    assert cli.main(["plan", "--config", str(bad), "--out", str(out)]) == cli.EXIT_CONFIG
    assert not out.exists()


def test_unreadable_yaml_is_one_line(tmp_path, capsys):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text("config:\n  gpu-platform:cloud: [aws\n")
    assert cli.main(["plan", "--config", str(path), "--out", str(tmp_path / "o")]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err
    assert err.startswith("error: broken: cannot read Pulumi.broken.yaml:") and err.count("\n") == 1


def test_unknown_stack_name_suggests_the_nearest(capsys):
    assert cli.main(["plan", "existng", "--out", "/tmp/unused-plan-dir"]) == cli.EXIT_CONFIG
    assert capsys.readouterr().err == (
        "error: existng: no stack file stacks/Pulumi.existng.yaml; did you mean 'existing'?\n")
