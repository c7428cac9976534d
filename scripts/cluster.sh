#!/usr/bin/env bash
# Over 300 lines because it brings the local two-node cluster up in the order its steps depend on (decision 0122), each step a function.
# A two-node Kubernetes cluster on this machine, with real containers and nothing pulled from a
# registry (issue 31; what was found to work here: ../shared/guide/local-kubernetes.md).
#
#   scripts/cluster.sh up       start it (builds the binaries once per machine), print how to use it
#   scripts/cluster.sh down     stop it and remove what it made: processes, pods, mounts, network
#                               namespaces, the bridge and kube-proxy's rules (images stay cached)
#   scripts/cluster.sh status   say whether it runs
#   scripts/cluster.sh env      print the exports (KUBECONFIG, PATH, CLUSTER_NODE_IP) to use it from a shell
#   scripts/cluster.sh load IMAGE...   copy images from podman into the cluster's containerd
#
# What runs, each a host process started here: etcd (Debian's etcd-server), kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy (iptables mode) and CoreDNS (built by
# scripts/cluster-binaries.sh at the pinned version), and per node a kubelet with its own containerd
# (runc and the CNI plugins from Debian). Two nodes by default, so that a node can be drained.
# Node N's pods sit on a bridge (voiceapi<N-1>, 10.244.<N-1>.0/24) whose host address 10.244.<N-1>.1
# is the node's address, where its kubelet listens. The apiserver and the cluster DNS listen on
# node 1's, 10.244.0.1 (nothing listens beyond this machine), and so may host servers the pods
# should reach (the test store and Kafka).
#
# Settings: VOICEAPI_CLUSTER_DIR (state, default /var/lib/voiceapi-cluster), VOICEAPI_CLUSTER_NODES
# (1-9, default 2), VOICEAPI_CACHE.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${VOICEAPI_CLUSTER_DIR:-/var/lib/voiceapi-cluster}
# A running cluster's own count (down and load must reach every node it started).
NODES=${VOICEAPI_CLUSTER_NODES:-$(cat "$DIR/run/nodes" 2>/dev/null || echo 2)}
[[ $NODES =~ ^[1-9]$ ]] || { echo "[cluster] VOICEAPI_CLUSTER_NODES must be 1-9, not '$NODES'" >&2; exit 2; }
# Node 1's address: the apiserver's, the cluster DNS's and the host servers'.
NODE_IP=10.244.0.1
POD_RANGE=10.244.0.0/16
node_name() { echo "voiceapi-node-$1"; }
node_ip() { echo "10.244.$(($1 - 1)).1"; }
node_subnet() { echo "10.244.$(($1 - 1)).0/24"; }
bridge() { echo "voiceapi$(($1 - 1))"; }
ctr_sock() { echo "$DIR/run/containerd-$1.sock"; }
SERVICE_RANGE=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
API_PORT=6443
ETCD_PORT=12379
ETCD_PEER_PORT=12380
PAUSE_IMAGE=registry.k8s.io/pause:3.9
# podman (the pause image, and the images `load` copies) reads the project's settings only.
export CONTAINERS_CONF=$ROOT/deploy/images/containers.conf
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy coredns)
for n in $(seq 1 "$NODES"); do COMPONENTS+=("containerd-$n" "kubelet-$n"); done

say() { echo "[cluster] $*" >&2; }
# One line that says why and what to do; `up` cleans up on its way out.
fail() { echo "[cluster] cannot start: $*" >&2; exit 1; }

pidfile() { echo "$DIR/run/$1.pid"; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }
kubectl_() { "$BIN/kubectl" --kubeconfig "$DIR/admin.kubeconfig" "$@"; }
ctr_() { local n=$1; shift; ctr --address "$(ctr_sock "$n")" --namespace k8s.io "$@"; }

# Starts a component in its own session (so `down` can stop it and its children), logging to logs/.
start() {
  local name=$1; shift
  setsid "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
}

# Waits up to $2 s for the command after it; on timeout fails with the component's last log lines.
wait_for() {
  local name=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! running "$name"; then
      tail -n 15 "$DIR/logs/$name.log" >&2 || true
      fail "$name exited at start (log above, whole log: $DIR/logs/$name.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 15 "$DIR/logs/$name.log" >&2 || true
      fail "$name was not ready after ${seconds} s (log above, whole log: $DIR/logs/$name.log)"
    fi
    sleep 0.3
  done
}

# Whether a component's log says $3 after its first $2 lines (logs are appended run after run).
logged_since() { tail -n "+$(($2 + 1))" "$DIR/logs/$1.log" | grep -q "$3"; }

# ------------------------------------------------------------------------------------- preflight
install_packages() {
  local missing=() tool
  for tool in containerd:containerd runc:runc etcd:etcd-server conntrack:conntrack iptables:iptables openssl:openssl curl:curl ss:iproute2 pgrep:procps findmnt:util-linux; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
  done
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap ]] || missing+=(containernetworking-plugins)
  ((${#missing[@]})) || return 0
  [[ $(id -u) == 0 ]] || fail "missing Debian packages ${missing[*]}: install them, or run as root to let this script do it"
  say "installing ${missing[*]} from Debian's packages"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

preflight() {
  [[ $(id -u) == 0 ]] || fail "a kubelet and containerd need root: run as root"
  [[ -d /proc/sys/net/bridge ]] || modprobe br_netfilter 2>/dev/null || fail "the kernel has no br_netfilter (needed for Services between pods on one bridge): load the module"
  local port
  for port in $API_PORT $ETCD_PORT $ETCD_PEER_PORT 10250 10249 10256 10257 10259 $(for n in $(seq 1 "$NODES"); do echo $((10248 + 100 * (n - 1))); done); do
    if ss -Hltn "sport = :$port" | grep -q .; then
      fail "port $port is taken ($(ss -Hltnp "sport = :$port" | awk '{print $NF}' | head -1)): stop that process, or 'scripts/cluster.sh down' if it is an old cluster"
    fi
  done
  if ss -Hlun "sport = :53" | grep -qE "(0\.0\.0\.0|\*|$NODE_IP):53"; then fail "port 53 is taken on $NODE_IP (the cluster DNS): stop that DNS server"; fi
  local n
  for n in $(seq 1 "$NODES"); do
    ip link show "$(bridge "$n")" >/dev/null 2>&1 && fail "the bridge $(bridge "$n") exists: a cluster is left over; run 'scripts/cluster.sh down'"
  done
  return 0
}

# ------------------------------------------------------------------------------------ credentials
# A CA, the apiserver's serving certificate, the apiserver's client certificate for the kubelet, the
# kubelet's serving certificate, a service-account key pair, and one token per client (token file).
make_credentials() {
  local pki=$DIR/pki
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=voiceapi-cluster-ca -keyout ca.key -out ca.crt 2>/dev/null
    sign() { # name subject [extensions]
      openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
      if [[ -n ${3:-} ]]; then printf '%s\n' "$3" >"$1.ext"; else : >"$1.ext"; fi
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    }
    sign apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:$NODE_IP,IP:$API_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
    for n in $(seq 1 "$NODES"); do sign "kubelet-$n" "/CN=$(node_name "$n")" "subjectAltName=IP:$(node_ip "$n"),DNS:$(node_name "$n")"; done
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  # token,user,uid,"groups": the kubelet as its node (Node authorizer), the others by their own names
  # with the roles Kubernetes binds to them by default; the admin and CoreDNS as masters.
  : >"$pki/tokens.csv"
  local client
  local clients=()
  for n in $(seq 1 "$NODES"); do clients+=("kubelet-$n system:node:$(node_name "$n") system:nodes"); done
  for client in "${clients[@]}" "admin admin system:masters" \
    "kube-controller-manager system:kube-controller-manager -" "kube-scheduler system:kube-scheduler -" \
    "kube-proxy system:kube-proxy -" "coredns coredns system:masters"; do
    local name user groups token
    read -r name user groups <<<"$client"
    [[ $groups == - ]] && groups=""
    token=$(openssl rand -hex 24)
    echo "$token,$user,$user,\"$groups\"" >>"$pki/tokens.csv"
    kubeconfig "$name" "$token"
  done
  chmod 600 "$pki"/*.key "$pki/tokens.csv" "$DIR"/*.kubeconfig
}

kubeconfig() { # name token
  cat >"$DIR/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: voiceapi
    cluster:
      server: https://$NODE_IP:$API_PORT
      certificate-authority: $DIR/pki/ca.crt
users:
  - name: $1
    user:
      token: $2
contexts:
  - name: voiceapi
    context: { cluster: voiceapi, user: $1 }
current-context: voiceapi
EOF
}

# ------------------------------------------------------------------------------------------- node
# The pod bridge exists before any pod so that the node address (and the host servers pods reach)
# can be bound at once; the CNI bridge plugin adopts it.
# Pods of different nodes reach each other through the host's routes (forwarding on); no address
# translation between them (ipMasq off), as on a flat pod network.
make_network() {
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 >/dev/null ||
    fail "could not set net.ipv4.ip_forward and net.bridge.bridge-nf-call-iptables (sysctl refused)"
  local n
  for n in $(seq 1 "$NODES"); do make_node_network "$n"; done
}

make_node_network() {
  local n=$1 br; br=$(bridge "$1")
  ip link add "$br" type bridge
  ip addr add "$(node_ip "$n")/24" dev "$br"
  ip link set "$br" up
  mkdir -p "$DIR/cni-$n/net.d"
  cat >"$DIR/cni-$n/net.d/10-voiceapi.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "voiceapi",
  "plugins": [
    {
      "type": "bridge", "bridge": "$br", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$DIR/cni-$n/ipam",
        "ranges": [[{ "subnet": "$(node_subnet "$n")", "gateway": "$(node_ip "$n")" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

# runc, with a negative oomScoreAdj in the container's spec raised to 0: this machine lacks
# CAP_SYS_RESOURCE, and runc fails every pod sandbox trying to lower it (local-kubernetes.md).
make_runc_wrapper() {
  cat >"$DIR/bin/runc" <<EOF
#!/bin/sh
bundle=""
prev=""
for arg in "\$@"; do
  case \$prev in --bundle | -b) bundle=\$arg ;; esac
  case \$arg in --bundle=*) bundle=\${arg#--bundle=} ;; esac
  prev=\$arg
done
if [ -n "\$bundle" ] && [ -f "\$bundle/config.json" ]; then
  sed -i -E 's/"oomScoreAdj":[[:space:]]*-[0-9]+/"oomScoreAdj":0/' "\$bundle/config.json"
fi
exec $(command -v runc) "\$@"
EOF
  chmod +x "$DIR/bin/runc"
}

start_containerd() {
  local n=$1 sock; sock=$(ctr_sock "$1")
  mkdir -p "$DIR/containerd-$n" "$DIR/run/containerd-$n"
  cat >"$DIR/containerd-$n.toml" <<EOF
version = 2
root = "$DIR/containerd-$n/root"
state = "$DIR/run/containerd-$n"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni-$n/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$DIR/bin/runc"
        SystemdCgroup = false
EOF
  start "containerd-$n" containerd --config "$DIR/containerd-$n.toml"
  wait_for "containerd-$n" 30 ctr --address "$sock" version
}

# The pod sandbox image, built from deploy/cluster/pause/pause.c (nothing can be pulled here).
load_pause_image() {
  local n lacking=0
  for n in $(seq 1 "$NODES"); do ctr_ "$n" images ls -q | grep -qx "$PAUSE_IMAGE" || lacking=1; done
  ((lacking)) || return 0
  local ctx; ctx=$(mktemp -d)
  cc -static -Os -o "$ctx/pause" "$ROOT/deploy/cluster/pause/pause.c" || fail "could not compile deploy/cluster/pause/pause.c (needs cc and a static libc: Debian's libc6-dev)"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
  podman build --quiet --pull=never -t "$PAUSE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
  load_images "$PAUSE_IMAGE"
}

# Copies images from podman into every node's containerd (saved once, imported per node).
load_images() {
  local image n archive
  for image in "$@"; do
    podman image exists "$image" || fail "no image $image in podman: run 'make images' first"
  done
  archive=$(mktemp "$DIR/run/images.XXXXXX.tar")
  podman save --quiet --format docker-archive --multi-image-archive -o "$archive" "$@" ||
    { rm -f "$archive"; fail "podman could not save the images $*"; }
  for n in $(seq 1 "$NODES"); do
    import_archive "$n" "$archive" || { rm -f "$archive"; fail "node $n's containerd refused the images $*"; }
  done
  rm -f "$archive"
}

# containerd 1.6 now and then loses a layer's parent snapshot while unpacking images that share layers
# ("failed to prepare extraction snapshot ... parent snapshot ... does not exist"); the import is idempotent,
# so it is tried up to three times (three failures are a real refusal).
import_archive() {
  local n=$1 archive=$2 attempt
  for attempt in 1 2 3; do
    ctr_ "$n" images import "$archive" >/dev/null && return 0
    ((attempt < 3)) && say "node $n's containerd failed to import the images (attempt $attempt); trying again"
  done
  return 1
}

# ----------------------------------------------------------------------------------- control plane
start_control_plane() {
  local pki=$DIR/pki
  start etcd etcd --name voiceapi --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "voiceapi=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "" --quota-backend-bytes 1073741824
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SERVICE_RANGE" --allow-privileged=false \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
    --token-auth-file "$pki/tokens.csv" --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --profiling=false --v=1
  wait_for kube-apiserver 60 kubectl_ get --raw /readyz

  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/kube-controller-manager.kubeconfig" --authorization-kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --service-cluster-ip-range "$SERVICE_RANGE" --profiling=false --v=1
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$DIR/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/kube-scheduler.kubeconfig" --authorization-kubeconfig "$DIR/kube-scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --profiling=false --v=1
}

# A node's kubelet. Its pods' cgroups live under their own root (/voiceapi-node-N in every
# hierarchy): two kubelets under one root would each take the other's pods for orphans.
start_kubelet() {
  local n=$1 pki=$DIR/pki name; name=$(node_name "$1")
  local controller
  for controller in /sys/fs/cgroup/*/; do mkdir -p "$controller$name" 2>/dev/null || true; done
  cat >"$DIR/kubelet-$n.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(node_ip "$n")
healthzBindAddress: 127.0.0.1
healthzPort: $((10248 + 100 * (n - 1)))
cgroupRoot: /$name
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: $pki/ca.crt }
authorization: { mode: Webhook }
tlsCertFile: $pki/kubelet-$n.crt
tlsPrivateKeyFile: $pki/kubelet-$n.key
containerRuntimeEndpoint: unix://$(ctr_sock "$n")
cgroupDriver: cgroupfs
failSwapOn: false
oomScoreAdj: 0
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: $DIR/resolv.conf
# Nothing can be pulled back here: never collect images, and never evict for disk. The disk is the
# host's, shared with whatever else runs on it; under disk pressure a kubelet taints its node (no pod
# schedules) and deletes unused images to reclaim space, the pause image among them (containerd 1.6
# does not pin it), after which no sandbox starts. "0%" turns a signal off.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: 200Mi, nodefs.available: "0%", imagefs.available: "0%" }
serializeImagePulls: false
EOF
  start "kubelet-$n" "$BIN/kubelet" --config "$DIR/kubelet-$n.yaml" --kubeconfig "$DIR/kubelet-$n.kubeconfig" \
    --root-dir "$DIR/kubelet-$n" --node-ip "$(node_ip "$n")" --hostname-override "$name" --v=1
}

start_nodes() {
  # Host names outside the cluster are not resolved in pods (no upstream DNS is needed here).
  echo "nameserver $NODE_IP" >"$DIR/resolv.conf"
  local n
  # One at a time: every kubelet binds the same device-plugin socket (/var/lib/kubelet/device-plugins,
  # not under --root-dir), and two binding at once leave one failed ("address already in use").
  # The plugin manager starts right after that socket is bound.
  local lines
  for n in $(seq 1 "$NODES"); do
    lines=$( { wc -l <"$DIR/logs/kubelet-$n.log"; } 2>/dev/null || echo 0)
    start_kubelet "$n"
    wait_for "kubelet-$n" 60 logged_since "kubelet-$n" "$lines" "Starting Kubelet Plugin Manager"
  done

  cat >"$DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: { kubeconfig: $DIR/kube-proxy.kubeconfig }
hostnameOverride: $(node_name 1)
clusterCIDR: $POD_RANGE
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Leave the machine's conntrack limits alone (they cannot be raised here).
conntrack: { maxPerCore: 0, min: 0 }
EOF
  start kube-proxy "$BIN/kube-proxy" --config "$DIR/kube-proxy.yaml" --v=1

  cat >"$DIR/Corefile" <<EOF
.:53 {
  bind $NODE_IP
  errors
  ready 127.0.0.1:8181
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $DIR/coredns.kubeconfig
    pods insecure
    fallthrough in-addr.arpa ip6.arpa
  }
  cache 5
  loadbalance
}
EOF
  start coredns "$BIN/coredns" -conf "$DIR/Corefile"
  wait_for coredns 30 curl -fsS http://127.0.0.1:8181/ready
  for n in $(seq 1 "$NODES"); do wait_for "kubelet-$n" 60 kubectl_ wait --for=condition=Ready "node/$(node_name "$n")" --timeout=1s; done
  # Pods can be made once the controller-manager gave the namespace its service account.
  wait_for kube-controller-manager 60 kubectl_ -n default get serviceaccount default
}

# ------------------------------------------------------------------------------------------- down
down() {
  if [[ ! -d $DIR/run ]]; then
    left_behind || return 1
    say "no cluster here ($DIR)"
    return 0
  fi
  BIN=${BIN:-$(cat "$DIR/bin.path" 2>/dev/null || true)}
  # Pods first, through the kubelet, so that each sandbox's network is torn down by the CNI plugins.
  if running kube-apiserver && running kubelet-1; then
    kubectl_ delete namespaces --all --wait=false --ignore-not-found >/dev/null 2>&1 || true
    kubectl_ delete pods --all --all-namespaces --grace-period=5 --timeout=30s >/dev/null 2>&1 || true
  fi
  local name n
  for n in $(seq 1 "$NODES"); do stop "kubelet-$n"; done
  for name in kube-proxy coredns kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$name"; done
  # Whatever sandbox is left: kill its processes, remove it, and its network namespace.
  for n in $(seq 1 "$NODES"); do
    if running "containerd-$n"; then
      local id
      for id in $(ctr_ "$n" tasks ls -q 2>/dev/null); do ctr_ "$n" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
      sleep 0.5
      for id in $(ctr_ "$n" tasks ls -q 2>/dev/null); do ctr_ "$n" tasks delete -f "$id" >/dev/null 2>&1 || true; done
      for id in $(ctr_ "$n" containers ls -q 2>/dev/null); do ctr_ "$n" containers delete "$id" >/dev/null 2>&1 || true; done
    fi
    stop "containerd-$n"
    pkill -KILL -f "containerd-shim-runc-v2 .*-address $(ctr_sock "$n")" 2>/dev/null || true
  done
  # Mounts made for pods (volumes, overlay roots, shm), deepest first.
  findmnt -rn -o TARGET | grep -E "^($DIR|/run/containerd|/run/netns/cni-)" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done || true
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do ip netns delete "$ns" 2>/dev/null || true; done
  for n in $(seq 1 "$NODES"); do ip link delete "$(bridge "$n")" 2>/dev/null || true; done
  # The nodes' cgroups, deepest first (the kubelets made the QoS and pod levels below them).
  for n in $(seq 1 "$NODES"); do
    find /sys/fs/cgroup/*/"$(node_name "$n")" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  [[ -x ${BIN:-}/kube-proxy ]] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  # The chains our cluster made: the kubelet's own (KUBE-FIREWALL, the canaries, KUBE-MARK-MASQ),
  # which kube-proxy's cleanup leaves, and the CNI plugins' (portmap's) that were not on the machine
  # before `up` (podman's CNI-FORWARD and CNI-ADMIN are the machine's): the jumps first, then the chains.
  local ipt table chain
  while read -r ipt table chain; do
    "$ipt" -t "$table" -S 2>/dev/null | grep -E -- "^-A .* -j $chain( |\$)" | sed 's/^-A/-D/' | while read -r rule; do eval "$ipt -t $table $rule" 2>/dev/null || true; done || true
  done < <(our_chains)
  while read -r ipt table chain; do "$ipt" -t "$table" -F "$chain" 2>/dev/null || true; done < <(our_chains)
  while read -r ipt table chain; do "$ipt" -t "$table" -X "$chain" 2>/dev/null || true; done < <(our_chains)
  # Keep containerd's image store (imports are slow); everything else is made afresh by `up`.
  rm -rf "$DIR/run" "$DIR/etcd" "$DIR"/kubelet-* "$DIR"/cni-* "$DIR/pki" "$DIR"/*.kubeconfig
  left_behind || return 1
  say "stopped; nothing left running"
}

# What a stopped cluster must not leave: processes, mounts, network namespaces, the bridge, rules.
left_behind() {
  local left=()
  pgrep -f "$DIR/|kube-apiserver|kube-controller-manager|kube-scheduler|containerd-shim-runc-v2 .*-address $DIR/run/" >/dev/null && left+=("processes ($(pgrep -f "$DIR/|kube-apiserver|kube-controller-manager|kube-scheduler" | tr '\n' ' '))")
  findmnt -rn -o TARGET | grep -qE "^($DIR|/run/netns/cni-)" && left+=(mounts)
  ip netns list 2>/dev/null | grep -q '^cni-' && left+=("network namespaces")
  local n
  for n in $(seq 1 "$NODES"); do
    ip link show "$(bridge "$n")" >/dev/null 2>&1 && left+=("the bridge $(bridge "$n")")
    compgen -G "/sys/fs/cgroup/*/$(node_name "$n")" >/dev/null && left+=("the cgroups of $(node_name "$n")")
  done
  local chains; chains=$(our_chains | awk '{print $1 "/" $2 "/" $3}' | tr '\n' ' ')
  [[ -n $chains ]] && left+=("iptables chains ($chains)")
  ((${#left[@]} == 0)) && return 0
  echo "[cluster] left behind after stopping: ${left[*]}" >&2
  return 1
}

# "iptables|ip6tables table chain" of every KUBE- or CNI- chain on the machine.
iptables_chains() {
  local ipt table
  for ipt in iptables ip6tables; do
    for table in filter nat mangle; do
      "$ipt" -t "$table" -S 2>/dev/null | awk -v ipt="$ipt" -v t="$table" '/^-N (KUBE|CNI)-/{print ipt, t, $2}' || true
    done
  done
}

# The chains our cluster made: every KUBE- chain, and the CNI- chains the machine did not have when
# `up` last started (recorded in $DIR/iptables-before; none are ours if it never started here).
our_chains() {
  local before=$DIR/iptables-before
  local chains; chains=$(iptables_chains)
  [[ -n $chains ]] || return 0
  grep -v ' CNI-' <<<"$chains" || true
  [[ -f $before ]] && { grep ' CNI-' <<<"$chains" | grep -vxFf "$before" || true; }
  return 0
}

stop() {
  local name=$1 pid
  pid=$(cat "$(pidfile "$name")" 2>/dev/null) || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$(pidfile "$name")"
}

up() {
  if [[ -d $DIR/run ]] && running kube-apiserver; then say "already running"; print_usage; return 0; fi
  install_packages
  preflight
  mkdir -p "$DIR"
  iptables_chains >"$DIR/iptables-before"
  BIN=$(bash "$ROOT/scripts/cluster-binaries.sh") || fail "the Kubernetes binaries could not be built (scripts/cluster-binaries.sh, output above)"
  local started=$SECONDS
  trap 'status=$?; if ((status)); then say "stopping what started"; down >/dev/null 2>&1 || true; fi' EXIT
  rm -rf "$DIR/run" "$DIR/etcd" "$DIR"/kubelet-* "$DIR"/cni-* "$DIR/pki" "$DIR/logs"
  mkdir -p "$DIR/run" "$DIR/logs" "$DIR/bin"
  echo "$BIN" >"$DIR/bin.path"
  echo "$NODES" >"$DIR/run/nodes"
  make_network
  make_credentials
  make_runc_wrapper
  local n
  for n in $(seq 1 "$NODES"); do start_containerd "$n"; done
  load_pause_image
  start_control_plane
  start_nodes
  trap - EXIT
  say "up in $((SECONDS - started)) s"
  print_usage
}

print_usage() {
  cat <<EOF
The cluster runs ($NODES node(s), $(for n in $(seq 1 "$NODES"); do printf '%s at %s ' "$(node_name "$n")" "$(node_ip "$n")"; done); state and logs in $DIR):
  export KUBECONFIG=$DIR/admin.kubeconfig PATH=$(cat "$DIR/bin.path"):\$PATH
  kubectl get nodes
  scripts/cluster.sh load docker.io/voiceapi/gateway:0.1.0   # images from podman (make images)
  scripts/cluster.sh down
EOF
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status)
    for c in "${COMPONENTS[@]}"; do if running "$c"; then echo "$c: running"; else echo "$c: stopped"; fi; done ;;
  env) echo "export KUBECONFIG=$DIR/admin.kubeconfig PATH=$(cat "$DIR/bin.path"):\$PATH CLUSTER_NODE_IP=$NODE_IP" ;;
  load) shift; BIN=$(cat "$DIR/bin.path"); running containerd-1 || fail "the cluster is not running"; load_images "$@" ;;
  *) sed -n '2,21p' "$0"; exit 2 ;;
esac
