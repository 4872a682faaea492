"""OCI IAM policy statements of the OKE layer, as pure strings (no cloud SDK).

Every statement is scoped to the stack's compartment and to one resource type or family, and names its principal
precisely: the platform creates no dynamic group and grants nothing to node instances (instance principals). What
runs in the cluster authenticates as its own Kubernetes service account through OKE workload identity.
"""


def workload_principal(cluster_id: str, namespace: str, service_account: str) -> str:
    """The condition matching one Kubernetes service account of this cluster (OKE workload identity)."""
    return ", ".join([
        "request.principal.type='workload'",
        f"request.principal.namespace='{namespace}'",
        f"request.principal.service_account='{service_account}'",
        f"request.principal.cluster_id='{cluster_id}'",
    ])


def compartment_scope(compartment_id: str) -> str:
    """Where a statement applies: ``compartment id <ocid>``, or ``tenancy`` for the root compartment (the policy
    language names the root compartment ``tenancy``; ``compartmentId`` may be the tenancy OCID)."""
    return "tenancy" if compartment_id.startswith("ocid1.tenancy.") else f"compartment id {compartment_id}"


def secrets_key_statement(compartment_id: str, key_id: str) -> str:
    """The statement letting OKE clusters (and nothing else) use the Secrets key, as Oracle documents it
    ("Encrypting Kubernetes Secrets at Rest in Etcd", contengencryptingdata.htm, "Create a new IAM policy
    (recommended)"). Oracle's optional narrowing to one ``request.principal.id`` needs the cluster's OCID, which
    exists only once the cluster was created with the key; the key is this cluster's own, so ``target.key.id``
    already limits the grant to it."""
    return (f"Allow any-user to use keys in {compartment_scope(compartment_id)} where ALL "
            f"{{request.principal.type = 'cluster', target.key.id = '{key_id}'}}")
