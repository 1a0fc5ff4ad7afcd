// Command server is etcd's own server at the version go.mod names (3.7), built from the Go
// module proxy by build.sh into ../etcd-3.7: etcd's main, nothing added. A lock file runs its
// cases on it with "server" (docs/files.md); Debian's etcd (3.4.23) serves every other.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
