"""Serving: inference services (`inference_objects`, `workloads`), KEDA (`keda`), the Gateway API entry point
(`gateway_config`, `gateway`, `gateway_objects`, `gateway_values`), cert-manager (`cert_manager`) and the LLM service
behind the inference gateway (`llm_config`, `llm_models`, `llm`, `llm_objects`); the ``inference`` stack section
(`inference_config`).

May import: the data modules, `kubernetes_base`, `security`, `accelerators` (DRA claims), `monitoring`
(scrape policies, metric names), `scheduling` (priorities), `storage` (model caches), `health` (placement away from
quarantined nodes), the configuration model. No cloud SDK.
"""
