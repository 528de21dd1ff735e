// The sandbox ("pause") process of every pod on the test node: it holds the pod's
// namespaces, reaps orphans when it is PID 1 of a shared PID namespace, and exits on
// SIGINT/SIGTERM. Built static by test/platform/images/build-images.ts.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
