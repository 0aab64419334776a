{{/*
Checks across values that values.schema.json cannot state; each fails the
render with a message that names the values to change.
*/}}
{{- define "mcpfleet.validate" -}}
{{- $v := .Values -}}
{{- $s := $v.secret -}}
{{- if and $s.create $s.existingSecret -}}
{{- fail "secret: set either secret.existingSecret (a Secret you made with `mcpfleet secret`) or secret.create with secret.value, not both" -}}
{{- end -}}
{{- if and (not $s.create) (not $s.existingSecret) -}}
{{- fail "secret: every gateway needs the same secret file: set secret.existingSecret to a Secret made with `mcpfleet secret`, or secret.create=true with secret.value" -}}
{{- end -}}
{{- if and $s.create (not $s.value) -}}
{{- fail "secret.create needs secret.value, the output of `mcpfleet secret` (--set-file secret.value=secret.yaml); the chart makes no keys itself, so that every render and every gateway agree" -}}
{{- end -}}
{{- $x := $v.redis.external -}}
{{- if and $v.redis.enabled (or $x.url $x.existingSecret) -}}
{{- fail "redis: set redis.enabled=false to use redis.external.url or redis.external.existingSecret, or leave both empty for the bundled Valkey" -}}
{{- end -}}
{{- if and $v.redis.enabled (ne $v.redis.mode "single") -}}
{{- fail "redis.mode: the bundled Valkey is one server (single); a cluster or sentinels are yours: set redis.enabled=false and name them in redis.external.url or redis.external.existingSecret" -}}
{{- end -}}
{{- if and (eq $v.redis.mode "sentinel") (not $v.redis.sentinelMaster) -}}
{{- fail "redis.sentinelMaster: required with redis.mode=sentinel, the name the sentinels watch the primary under" -}}
{{- end -}}
{{- if and $x.url $x.existingSecret -}}
{{- fail "redis.external: set either redis.external.url (a URL without a password) or redis.external.existingSecret (a Secret holding the URL), not both" -}}
{{- end -}}
{{- /* Any userinfo with a colon: a password, even one whose '/' ends the authority early. */ -}}
{{- if regexMatch "^rediss?://[^@]*:[^@]*@" $x.url -}}
{{- fail "redis.external.url carries a password, which would land in the gateway's ConfigMap in clear: put the URL in a Secret and name it in redis.external.existingSecret (serve reads it as redis_url_file), or give a URL without one" -}}
{{- end -}}
{{- /* Userinfo, a query or a fragment: serve refuses them at start, and
they would already be in the ConfigMap, a credential among them. The
message does not repeat the URL. */ -}}
{{- $ep := $v.gateway.telemetry.otlpEndpoint -}}
{{- if or (regexMatch "^https?://[^/?#]*@" $ep) (regexMatch "[?#]" $ep) -}}
{{- fail "gateway.telemetry.otlpEndpoint carries credentials, a query or a fragment, which serve refuses and which would land in the gateway's ConfigMap in clear: give the collector's base URL alone (http://otel-collector.observability:4318) and its credential as OTEL_EXPORTER_OTLP_HEADERS from a Secret, in gateway.extraEnv with valueFrom.secretKeyRef" -}}
{{- end -}}
{{- $many := or (gt (int $v.replicaCount) 1) (and $v.autoscaling.enabled (gt (int $v.autoscaling.maxReplicas) 1)) -}}
{{- if and $many (not (include "mcpfleet.hasRedis" .)) -}}
{{- fail "more than one gateway needs a shared store for idempotency records, tasks and limits: set redis.enabled=true, redis.external.url or redis.external.existingSecret, or replicaCount=1 without autoscaling" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas is above autoscaling.maxReplicas" -}}
{{- end -}}
{{- /* The services without replicas of their own, which get the single fleet's. */ -}}
{{- $fleetless := list -}}
{{- range $i, $s := $v.gateway.services -}}
{{- if not (or (get $s "discovery") (get $s "upstreams")) }}{{ $fleetless = append $fleetless (printf "gateway.services[%d] (%s)" $i (get $s "name")) }}{{ end -}}
{{- end -}}
{{- if not $v.exampleServer.enabled -}}
{{- if and $v.gateway.discovery.dnsName $v.gateway.upstreams -}}
{{- fail "gateway: set either gateway.discovery.dnsName or gateway.upstreams, not both" -}}
{{- end -}}
{{- if not (or $v.gateway.discovery.dnsName $v.gateway.upstreams) -}}
{{- if not $v.gateway.services -}}
{{- fail "gateway: with exampleServer.enabled=false the gateway needs its replicas: gateway.discovery.dnsName (a headless Service) and gateway.discovery.port, or gateway.upstreams" -}}
{{- else if $fleetless -}}
{{- fail (printf "%s: no replicas: give it discovery (dnsName and port) or upstreams, or set gateway.discovery or gateway.upstreams for every service without its own (exampleServer.enabled=false)" (join ", " $fleetless)) -}}
{{- end -}}
{{- end -}}
{{- if and $v.gateway.discovery.dnsName (not $v.gateway.discovery.port) -}}
{{- fail "gateway.discovery.port: the replicas' port is required with gateway.discovery.dnsName" -}}
{{- end -}}
{{- end -}}
{{- if and $v.networkPolicy.enabled $v.networkPolicy.upstreams.podLabels (not $v.networkPolicy.upstreams.port) -}}
{{- fail "networkPolicy.upstreams.port: the replicas' port is required with networkPolicy.upstreams.podLabels" -}}
{{- end -}}
{{- $owned := dict
  "listen" "from the image's ports"
  "admin" "from the image's ports"
  "admin_token_file" "from adminToken (the chart makes a token unless adminToken.existingSecret names one)"
  "secret_file" "from secret.*"
  "drain_delay" "from gateway.drainDelaySeconds"
  "grace" "from gateway.graceSeconds"
  "upstreams" "from gateway.upstreams"
  "discovery" "from exampleServer or gateway.discovery"
  "idempotency" "from redis.* (redis whenever the gateways share a store)"
  "task_store" "from redis.* (redis whenever the gateways share a store)"
  "redis_url" "from redis.enabled or redis.external.url"
  "redis_url_file" "from redis.external.existingSecret"
  "redis_mode" "from redis.mode"
  "redis_sentinel_master" "from redis.sentinelMaster"
  "gateways" "from replicaCount (autoscaling.maxReplicas with autoscaling on)"
  "services" "from gateway.services"
  "services_ready" "from gateway.servicesReady"
  "telemetry" "from gateway.telemetry"
  "authz" "from gateway.authz"
-}}
{{- range $key := keys $owned | sortAlpha -}}
{{- if hasKey $v.gateway.config $key -}}
{{- fail (printf "gateway.config.%s: the chart sets this key itself, %s" $key (get $owned $key)) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $v.gateway.config "limits") (kindIs "map" $v.gateway.config.limits) -}}
{{- if hasKey $v.gateway.config.limits "store" -}}
{{- fail "gateway.config.limits.store: the chart sets this key itself (redis whenever the gateways share a store)" -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.gateway.servicesReady "any") (not $v.gateway.services) -}}
{{- fail "gateway.servicesReady: only with gateway.services; a single service is ready when it has an eligible replica" -}}
{{- end -}}
{{- /* A service's config: its keys over the top level's, but not the chart's. */ -}}
{{- $entry := dict
  "name" "set gateway.services[%d].name"
  "path" "set gateway.services[%d].path"
  "hosts" "set gateway.services[%d].hosts"
  "default" "set gateway.services[%d].default"
  "upstreams" "set gateway.services[%d].upstreams"
  "discovery" "set gateway.services[%d].discovery"
-}}
{{- $names := dict -}}
{{- $defaults := list -}}
{{- range $i, $s := $v.gateway.services -}}
{{- $c := get $s "config" | default dict -}}
{{- range $key := keys $c | sortAlpha -}}
{{- if hasKey $entry $key -}}
{{- fail (printf "gateway.services[%d].config.%s: a key of the entry itself: %s" $i $key (printf (get $entry $key) $i)) -}}
{{- else if hasKey $owned $key -}}
{{- fail (printf "gateway.services[%d].config.%s: the chart sets this key itself, %s" $i $key (get $owned $key)) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $c "limits") (kindIs "map" (get $c "limits")) -}}
{{- if hasKey (get $c "limits") "store" -}}
{{- fail (printf "gateway.services[%d].config.limits.store: the chart sets this key itself (redis whenever the gateways share a store)" $i) -}}
{{- end -}}
{{- end -}}
{{- if and (get $s "discovery") (get $s "upstreams") -}}
{{- fail (printf "gateway.services[%d]: set either discovery or upstreams, not both" $i) -}}
{{- end -}}
{{- $name := get $s "name" -}}
{{- if hasKey $names $name -}}
{{- fail (printf "gateway.services[%d]: the name %q is gateway.services[%d]'s too" $i $name (get $names $name)) -}}
{{- end -}}
{{- $_ := set $names $name $i -}}
{{- if get $s "default" }}{{ $defaults = append $defaults $name }}{{ end -}}
{{- end -}}
{{- if gt (len $defaults) 1 -}}
{{- fail (printf "gateway.services: %s all say default: true; the root OAuth discovery documents go to one service" (join ", " $defaults)) -}}
{{- end -}}
{{- end -}}
