"""Monitoring: the kube-prometheus-stack and DCGM exporter component (`gpu_monitoring`), recording and alerting rules
(`rule_model`, `alerts`), Grafana dashboards (`panels`, `dashboards`), the LLM service's rules and dashboard
(`llm_monitoring`), upstream metric names (`metric_names`), the monitoring namespace's lockdown
(`monitoring_policies`), the ``monitoring`` stack section (`monitoring_config`) and GPU showback: its rules,
queries, arithmetic, dashboard and the ``gpu-platform usage`` program (`showback_rules`, `showback_queries`,
`showback_report`, `showback_dashboard`, `usage`).

May import: the data modules, `kubernetes_base`, `security`, `autoscaling` (the HPA metrics it must serve),
`serving` (KEDA), `optimizer.prometheus` (the Prometheus client `usage` reads with), the configuration model. No
cloud SDK.
"""
