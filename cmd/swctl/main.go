// Command swctl configures and inspects a switchyard switch through Redis:
// config verbs, config load/save, wait and show. See docs/swctl.md and
// swctl --help.
package main

import (
	"os"

	"github.com/switchyard-net/switchyard/swctl"
)

func main() { os.Exit(swctl.Main()) }
