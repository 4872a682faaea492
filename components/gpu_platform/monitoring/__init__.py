"""Monitoring: the kube-prometheus-stack and DCGM exporter component (`gpu_monitoring`), recording and alerting rules
(`rule_model`, `alerts`), Grafana dashboards (`panels`, `dashboards`), the LLM service's rules and dashboard
(`llm_monitoring`), upstream metric names (`metric_names`), the monitoring namespace's lockdown
(`monitoring_policies`) and the ``monitoring`` stack section (`monitoring_config`).

May import: the data modules, `kubernetes_base`, `security`, `autoscaling` (the HPA metrics it must serve),
`serving` (KEDA), the configuration model. No cloud SDK.
"""
