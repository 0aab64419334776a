# bench/lib.sh: helpers shared by the bench scripts (sourced; the caller
# sets WORK, a scratch directory, itself or with own_scratch).

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

# own_scratch NAME makes WORK, a scratch directory, and PIDS, the processes
# the script starts; on exit every one of them is killed and WORK removed.
own_scratch() {
	WORK=$(mktemp -d "/tmp/mcpfleet-$1.XXXXXX")
	PIDS=()
	trap _bench_cleanup EXIT
	trap 'exit 130' INT TERM
	ulimit -n 20000 2>/dev/null || true
}

_bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}

# free_port prints a loopback port nobody listens on and no earlier call
# gave. The ports given are kept in WORK, so that a call in a subshell, as
# in $(free_port), sees the others' too.
free_port() {
	local p given=${WORK:?free_port needs WORK}/.given-ports
	while :; do
		p=$((20000 + RANDOM % 12000))
		[[ -f $given ]] && grep -qx "$p" "$given" && continue
		ss -Hltn "sport = :$p" | grep -q . && continue
		echo "$p" >>"$given"
		echo "$p"
		return
	done
}

# wait_port waits (at most 10 s) until something listens on port $1.
wait_port() {
	local i
	for i in $(seq 100); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	log "nothing listens on $1"
	return 1
}

SALT=una-sal-larga-y-aleatoria-por-despliegue

# nginx_conf PORT BACKEND_PORT...: writes the config, prints its path. With
# NGINX_TLS=CERT:KEY set, the server listens with TLS 1.2 and 1.3 (and h2 by
# ALPN) on that pair, TLS 1.3 pinned to TLS_AES_128_GCM_SHA256, the suite
# Go's server picks, so that both proxies encrypt alike.
# With ACCESS_LOG set, nginx writes its default combined access log (a
# write per request, unbuffered, as nginx does by default) to a file.
nginx_conf() {
	local port=$1 b listen tls=""
	shift
	listen="listen 127.0.0.1:$port;"
	if [[ -n ${NGINX_TLS:-} ]]; then
		listen="listen 127.0.0.1:$port ssl http2;"
		tls="ssl_certificate ${NGINX_TLS%%:*};
        ssl_certificate_key ${NGINX_TLS#*:};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
        ssl_session_cache shared:SSL:1m;"
	fi
	mkdir -p "$WORK/nginx/$port"
	{
		cat <<NGX
worker_processes 1;
daemon off;
pid $WORK/nginx/$port/nginx.pid;
error_log $WORK/nginx/$port/error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 10000; }
http {
    $( [[ -n ${ACCESS_LOG:-} ]] && echo "access_log $WORK/nginx/$port/access.log combined;" || echo "access_log off;" )
    # nginx closes a client connection after 1000 requests by default:
    # h2load does not reconnect (a run stopped at 32 x 1000 requests), wrk
    # does. mcpfleet sets no such limit; neither does nginx here.
    keepalive_requests 10000000;
    client_body_temp_path $WORK/nginx/$port/body;
    proxy_temp_path $WORK/nginx/$port/proxy;
    fastcgi_temp_path $WORK/nginx/$port/fastcgi;
    uwsgi_temp_path $WORK/nginx/$port/uwsgi;
    scgi_temp_path $WORK/nginx/$port/scgi;
    map \$host \$mcp_salt { default "$SALT"; }
    map \$http_authorization \$mcp_bearer {
        default                     "";
        "~*^Bearer[ ]+(?<tok>\S+)\$" \$tok;
    }
    map \$mcp_bearer \$mcp_credential { default \$mcp_bearer; "" \$http_private_token; }
    map \$mcp_credential \$mcp_affinity { default \$mcp_credential; "" \$remote_addr; }
    upstream mcp {
        hash "\$mcp_salt\$mcp_affinity" consistent;
NGX
		for b in "$@"; do echo "        server 127.0.0.1:$b max_fails=2 fail_timeout=10s;"; done
		cat <<NGX
        keepalive 32;
    }
    server {
        $listen
        $tls
        location / {
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host              \$host;
            proxy_set_header X-Real-IP         \$remote_addr;
            proxy_set_header X-Forwarded-For   \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 1h;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 2;
        }
    }
}
NGX
	} >"$WORK/nginx/$port/nginx.conf"
	echo "$WORK/nginx/$port/nginx.conf"
}

# loadgen OUT CMD...: runs the load generator CMD, its output to the file
# OUT, and writes the CPU it took (user+system seconds) to
# $WORK/loadgen.cpu.
loadgen() {
	local TIMEFORMAT='%U %S' out=$1 rc=0
	shift
	{ time "$@" >"$out" 2>&1; } 2>"$WORK/loadgen.time" || rc=$?
	awk '{print $1 + $2}' "$WORK/loadgen.time" >"$WORK/loadgen.cpu"
	return $rc
}
