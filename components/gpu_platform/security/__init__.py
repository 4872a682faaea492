"""Security: Pod Security Admission levels per namespace (`namespace_security`), workload security contexts
(`pod_security`), the Calico policy engine for clusters without one (`network_policy_engine`) and which parts of a
stack rely on NetworkPolicies (`isolation`).

May import: the data modules, `kubernetes_base`, the configuration model. Every other feature may import it.
"""
