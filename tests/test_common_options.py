"""`clouds.common_options`: the shape the per-cloud options share (the managed control-plane field, the optional
key that must match a pattern, a ``nodePools`` entry as component args)."""

import dataclasses
import re

import pytest

from gpu_platform.clouds.aws.options import AwsClusterOptions
from gpu_platform.clouds.azure.options import AzureClusterOptions
from gpu_platform.clouds.common_options import ManagedClusterOptions, entry_args, read_matching
from gpu_platform.clouds.existing.options import ExistingClusterOptions
from gpu_platform.clouds.gcp.options import GcpClusterOptions
from gpu_platform.clouds.oci.options import OciClusterOptions
from gpu_platform.control_plane import ControlPlaneSecurity
from gpu_platform.errors import ConfigError

ID = re.compile(r"^vpc-[0-9a-f]{8}$")


@pytest.mark.parametrize("options", [AwsClusterOptions, AzureClusterOptions, GcpClusterOptions, OciClusterOptions])
def test_every_managed_cloud_holds_the_control_plane_under_one_name(options):
    assert issubclass(options, ManagedClusterOptions)
    assert options().control_plane == ControlPlaneSecurity()
    assert "control_plane" in {f.name for f in dataclasses.fields(options)}


def test_an_existing_cluster_has_no_control_plane_to_hold():
    assert not issubclass(ExistingClusterOptions, ManagedClusterOptions)


def test_read_matching():
    assert read_matching({}, "vpcId", "", ID, "a VPC id") is None
    assert read_matching({}, "vpcId", "", ID, "a VPC id", "vpc-00000000") == "vpc-00000000"
    assert read_matching({"vpcId": "vpc-0123abcd"}, "vpcId", "", ID, "a VPC id") == "vpc-0123abcd"
    with pytest.raises(ConfigError) as err:
        read_matching({"vpcId": "vpc-1"}, "vpcId", "nodePools[0]", ID, "a VPC id such as vpc-0123abcd")
    assert str(err.value) == "nodePools[0].vpcId: 'vpc-1' is not a VPC id such as vpc-0123abcd"
    with pytest.raises(ConfigError, match=r"^vpcId: '7' is not a VPC id$"):  # read_str spells a number as text
        read_matching({"vpcId": 7}, "vpcId", "", ID, "a VPC id")


class _Pool:
    def spec(self):
        return {"name": "p"}


def test_entry_args_leave_out_what_the_entry_left_out_in_order():
    args = entry_args(_Pool(), {"b": 0, "a": None, "c": [], "d": False, "e": "x"})
    assert args == {"pool": {"name": "p"}, "b": 0, "c": [], "d": False, "e": "x"}
    assert list(args) == ["pool", "b", "c", "d", "e"]
