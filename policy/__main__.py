"""The GPU policy pack: every rule of `gpu_platform.guardrails.rules.RULES` as a pulumi-policy policy.

A resource rule becomes a ``ResourceValidationPolicy`` whose ``validate`` hands the rule the resource's type and
inputs; a stack rule a ``StackValidationPolicy`` that hands it every resource of the stack and reports each
problem against the resource's URN. The rules themselves live in the library, so ``gpu-platform policy check``
runs the same functions over an offline plan. docs/policy.md: what each rule checks and why, how to attach and
publish the pack.
"""

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpu_platform.guardrails.props import Resource
from gpu_platform.guardrails.rules import RULES, Rule

PACK_NAME = "gpu-platform-guardrails"


def _schema(rule: Rule):
    return PolicyConfigSchema(properties=dict(rule.config_properties)) if rule.config_properties else None


def resource_policy(rule: Rule) -> ResourceValidationPolicy:
    """The rule over one resource's type and inputs."""
    check = rule.check_resource

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for message in check(args.resource_type, args.props, args.get_config()):
            report_violation(message, None)

    return ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                    enforcement_level=EnforcementLevel(rule.enforcement_level),
                                    config_schema=_schema(rule))


def stack_policy(rule: Rule) -> StackValidationPolicy:
    """The rule over every resource of the stack, each problem reported against its resource."""
    check = rule.check_stack

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [Resource(r.resource_type, r.name, r.props, r.urn) for r in args.resources]
        for resource, message in check(resources, args.get_config()):
            report_violation(f"{resource.name}: {message}", resource.urn)

    return StackValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                 enforcement_level=EnforcementLevel(rule.enforcement_level),
                                 config_schema=_schema(rule))


POLICIES = [resource_policy(rule) if rule.check_resource else stack_policy(rule) for rule in RULES]

if __name__ == "__main__":  # the Pulumi CLI runs the pack as __main__ (python -m pulumi.policy ENGINE policy/)
    PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
