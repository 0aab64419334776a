{{/*
The gateway's configuration file (docs/CONFIG.md): gateway.config with the
keys the chart owns set over it. toYaml sorts the keys, so the same values
always give the same file and the same checksum.
*/}}
{{- define "mcpfleet.config" -}}
{{- $v := .Values -}}
{{- $cfg := deepCopy $v.gateway.config -}}
{{- $_ := set $cfg "listen" "0.0.0.0:8080" -}}
{{- $_ = set $cfg "admin" "0.0.0.0:9090" -}}
{{- if $v.adminToken.existingSecret -}}
{{- $_ = set $cfg "admin_token_file" (printf "%s/admin-token" (include "mcpfleet.adminDir" .)) -}}
{{- end -}}
{{- $_ = set $cfg "secret_file" (printf "%s/secret.yaml" (include "mcpfleet.secretDir" .)) -}}
{{- $_ = set $cfg "drain_delay" (printf "%ds" (int $v.gateway.drainDelaySeconds)) -}}
{{- $_ = set $cfg "grace" (printf "%ds" (int $v.gateway.graceSeconds)) -}}
{{- if $v.exampleServer.enabled -}}
{{- $dns := printf "%s.%s.svc.%s" (include "mcpfleet.exampleName" .) .Release.Namespace $v.clusterDomain -}}
{{- $_ = set $cfg "discovery" (dict "dns_name" $dns "port" (int $v.exampleServer.port) "path" "/mcp") -}}
{{- else if $v.gateway.discovery.dnsName -}}
{{- $d := $v.gateway.discovery -}}
{{- $disc := dict "dns_name" $d.dnsName "port" (int $d.port) "path" $d.path "scheme" $d.scheme -}}
{{- if $d.maxInflight }}{{ $_ = set $disc "max_inflight" (int $d.maxInflight) }}{{ end -}}
{{- if $d.maxConnections }}{{ $_ = set $disc "max_connections" (int $d.maxConnections) }}{{ end -}}
{{- $_ = set $cfg "discovery" $disc -}}
{{- else -}}
{{- $_ = set $cfg "upstreams" $v.gateway.upstreams -}}
{{- end -}}
{{- /* The most gateways that may run, for the pool arithmetic against max_connections. */ -}}
{{- $_ = set $cfg "gateways" (int (ternary $v.autoscaling.maxReplicas $v.replicaCount $v.autoscaling.enabled)) -}}
{{- if include "mcpfleet.hasRedis" . -}}
{{- $_ = set $cfg "idempotency" "redis" -}}
{{- $_ = set $cfg "task_store" "redis" -}}
{{- if $v.redis.external.existingSecret -}}
{{- $_ = set $cfg "redis_url_file" (printf "%s/redis-url" (include "mcpfleet.redisDir" .)) -}}
{{- else -}}
{{- $_ = set $cfg "redis_url" (include "mcpfleet.redisURL" .) -}}
{{- end -}}
{{- $_ = set $cfg "redis_mode" $v.redis.mode -}}
{{- if eq $v.redis.mode "sentinel" -}}
{{- $_ = set $cfg "redis_sentinel_master" $v.redis.sentinelMaster -}}
{{- end -}}
{{- $limits := deepCopy (get $cfg "limits" | default dict) -}}
{{- $_ = set $limits "store" "redis" -}}
{{- $_ = set $cfg "limits" $limits -}}
{{- else -}}
{{- $_ = set $cfg "idempotency" "memory" -}}
{{- $_ = set $cfg "task_store" "memory" -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
