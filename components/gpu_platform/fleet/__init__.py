"""``gpu-platform fleet``: roll one release over many stacks, wave by wave (issue 39).

A fleet file (`fleet_file`) names the stacks in waves (a canary, then the rest), with per wave whether it may
disrupt, how long it bakes and which gates it must pass. `matrix` plans every stack offline and compares each plan
with the stack's last recorded one (``gpu-platform fleet plan``); `rollout` holds the pure decisions of a rollout
(wave order, gates, bake, stop, resume) over the state `state` records; `automation` is the thin adapter over
``pulumi.automation`` that ``gpu-platform fleet up`` drives; `command` is the command line.

The package sits in the commands layer: it calls the offline planner (`gpu_platform.plan`), the plan comparison
(`gpu_platform.upgrades.plan_diff`) and ``gpu-platform verify`` (`gpu_platform.verify_live`); nothing below imports
it.
"""
