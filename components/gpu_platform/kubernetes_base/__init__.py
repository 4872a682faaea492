"""The Kubernetes plumbing every feature's components build on: Helm releases, child resource options, object
metadata, argument refusals (`common`) and the generic custom-object component (`custom_object`).

May import: the data modules (catalog, labels, pools, versions, errors) and the component contract
(`component_args`). No feature, no cloud SDK.
"""
