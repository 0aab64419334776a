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
{{- /* The admin port listens on every address: serve needs its token. */ -}}
{{- $_ = set $cfg "admin_token_file" (printf "%s/admin-token" (include "mcpfleet.adminDir" .)) -}}
{{- $_ = set $cfg "secret_file" (printf "%s/secret.yaml" (include "mcpfleet.secretDir" .)) -}}
{{- $_ = set $cfg "drain_delay" (printf "%ds" (int $v.gateway.drainDelaySeconds)) -}}
{{- $_ = set $cfg "grace" (printf "%ds" (int $v.gateway.graceSeconds)) -}}
{{- if $v.gateway.services -}}
{{- /* Each service its own fleet; none at the top level, where it would be
every service's default and meet a service's own upstreams or discovery. */ -}}
{{- $services := list -}}
{{- range $s := $v.gateway.services -}}
{{- $e := deepCopy (get $s "config" | default dict) -}}
{{- range $key := list "name" "path" "hosts" "default" -}}
{{- if hasKey $s $key }}{{ $_ := set $e $key (get $s $key) }}{{ end -}}
{{- end -}}
{{- if get $s "discovery" -}}
{{- include "mcpfleet.discoveryInto" (dict "d" (get $s "discovery") "into" $e) -}}
{{- else if get $s "upstreams" -}}
{{- $_ := set $e "upstreams" (get $s "upstreams") -}}
{{- else -}}
{{- include "mcpfleet.fleetInto" (dict "root" $ "into" $e) -}}
{{- end -}}
{{- $services = append $services $e -}}
{{- end -}}
{{- $_ = set $cfg "services" $services -}}
{{- $_ = set $cfg "services_ready" $v.gateway.servicesReady -}}
{{- else -}}
{{- include "mcpfleet.fleetInto" (dict "root" . "into" $cfg) -}}
{{- end -}}
{{- /* A process key, never a service's: only the values set, the rest left
to the OTEL_* environment. A sampleRatio of 0 is set; null (or a key that
--set ...=null removed) is not. */ -}}
{{- $t := $v.gateway.telemetry -}}
{{- $tel := dict -}}
{{- if $t.otlpEndpoint }}{{ $_ = set $tel "otlp_endpoint" $t.otlpEndpoint }}{{ end -}}
{{- if $t.protocol }}{{ $_ = set $tel "protocol" $t.protocol }}{{ end -}}
{{- if and (hasKey $t "sampleRatio") (not (kindIs "invalid" (get $t "sampleRatio"))) }}{{ $_ = set $tel "sample_ratio" (get $t "sampleRatio") }}{{ end -}}
{{- if $t.serviceName }}{{ $_ = set $tel "service_name" $t.serviceName }}{{ end -}}
{{- if $tel }}{{ $_ = set $cfg "telemetry" $tel }}{{ end -}}
{{- /* A process key too: every service shares the rules. */ -}}
{{- $a := $v.gateway.authz -}}
{{- if or $a.rules (ne $a.default "allow") }}{{ $_ = set $cfg "authz" (dict "default" $a.default "rules" $a.rules) }}{{ end -}}
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

{{/*
The replicas of a service without its own (the only one, without
gateway.services): the example fleet, gateway.discovery or
gateway.upstreams, set into .into.
*/}}
{{- define "mcpfleet.fleetInto" -}}
{{- $v := .root.Values -}}
{{- if $v.exampleServer.enabled -}}
{{- $dns := printf "%s.%s.svc.%s" (include "mcpfleet.exampleName" .root) .root.Release.Namespace $v.clusterDomain -}}
{{- $_ := set .into "discovery" (dict "dns_name" $dns "port" (int $v.exampleServer.port) "path" "/mcp") -}}
{{- else if $v.gateway.discovery.dnsName -}}
{{- include "mcpfleet.discoveryInto" (dict "d" $v.gateway.discovery "into" .into) -}}
{{- else -}}
{{- $_ := set .into "upstreams" $v.gateway.upstreams -}}
{{- end -}}
{{- end -}}

{{/* A discovery value (gateway.discovery's keys) as serve's discovery, set into .into. */}}
{{- define "mcpfleet.discoveryInto" -}}
{{- $d := .d -}}
{{- $disc := dict "dns_name" $d.dnsName "port" (int $d.port) "path" (get $d "path" | default "/mcp") "scheme" (get $d "scheme" | default "http") -}}
{{- if get $d "maxInflight" }}{{ $_ := set $disc "max_inflight" (int $d.maxInflight) }}{{ end -}}
{{- if get $d "maxConnections" }}{{ $_ := set $disc "max_connections" (int $d.maxConnections) }}{{ end -}}
{{- $_ := set .into "discovery" $disc -}}
{{- end -}}
