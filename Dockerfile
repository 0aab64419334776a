# mcpfleet's image: a static binary FROM scratch, run as 65532:65532, with
# Debian's CA bundle and a passwd/group that name the user; no shell, no
# configuration, no secret. docs/IMAGE.md says how to run it, and how to
# build the same image without Docker (cd deploy/image && go run . --out DIR),
# whose tests hold this file to the same user, entrypoint, ports and check.
#
#   docker build -t mcpfleet .

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a change of source does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# BuildKit sets these for --platform; the build itself runs natively.
ARG TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-$(go env GOARCH)} \
    go build -trimpath -buildvcs=false -ldflags='-s -w' -o /out/mcpfleet ./cmd/mcpfleet \
 && chmod 0555 /out/mcpfleet
# The golang image carries Debian's ca-certificates; passwd and group name
# root and nonroot, so that tools show names, with no shell and no home.
RUN mkdir -p /out/etc/ssl/certs /out/etc/mcpfleet \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
 && printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
        'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /out/etc/passwd \
 && printf '%s\n' 'root:x:0:' 'nonroot:x:65532:' > /out/etc/group \
 && chmod 0444 /out/etc/passwd /out/etc/group /out/etc/ssl/certs/ca-certificates.crt \
 && chmod 0755 /out/etc /out/etc/ssl /out/etc/ssl/certs /out/etc/mcpfleet

FROM scratch
ARG VERSION=dev
LABEL org.opencontainers.image.title="mcpfleet" \
      org.opencontainers.image.description="The load balancer for fleets of MCP servers" \
      org.opencontainers.image.source="https://github.com/mcpfleet/mcpfleet" \
      org.opencontainers.image.version="$VERSION"
COPY --from=build /out/etc/ /etc/
COPY --from=build /out/mcpfleet /mcpfleet
USER 65532:65532
# 8080: the MCP listener (/mcp, /healthz, /readyz); 9090: admin (/metrics).
# The configuration must listen on 0.0.0.0 to be reached from outside.
EXPOSE 8080/tcp 9090/tcp
HEALTHCHECK --interval=10s --timeout=3s CMD ["/mcpfleet", "health"]
ENTRYPOINT ["/mcpfleet"]
CMD ["serve", "--config", "/etc/mcpfleet/mcpfleet.yaml"]
