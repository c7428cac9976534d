// The cluster DNS of the local Kubernetes cluster (issue 31): CoreDNS with only the plugins a
// cluster's Corefile uses, built by scripts/cluster-binaries.sh. CoreDNS's own main links every
// plugin in its plugin.cfg, and with them every cloud provider's SDK (route53, azure, clouddns)
// and more; this build keeps the cold build short. The directives keep the order plugin.cfg
// gives them (a request passes through the plugins in this order, whatever the Corefile says).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	dnsserver.Directives = []string{
		"reload",
		"bind",
		"ready",
		"health",
		"errors",
		"log",
		"loadbalance",
		"cache",
		"kubernetes",
		"loop",
		"forward",
	}
}

func main() {
	coremain.Run()
}
