//go:build etcd37

// The library at 3.7 (go.mod, go.sum: the Go module proxy; built with -tags etcd37 by
// build.sh): the same calls as etcd34.go's, under the module paths 3.5 introduced.
package main

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

type (
	Client                = clientv3.Client
	Config                = clientv3.Config
	Session               = concurrency.Session
	Mutex                 = concurrency.Mutex
	compareCreateRevision = pb.Compare_CreateRevision
)

var (
	newClient        = clientv3.New
	newSession       = concurrency.NewSession
	withTTL          = concurrency.WithTTL
	withContext      = concurrency.WithContext
	newMutex         = concurrency.NewMutex
	errLeaseNotFound = rpctypes.ErrLeaseNotFound
)

var library = "go.etcd.io/etcd/client/v3/concurrency " + version.Version

// ownerCompare is IsOwner()'s comparison as etcd's protobuf message (3.6 made Cmp a struct that wraps it).
func ownerCompare(m *Mutex) *pb.Compare {
	cmp := m.IsOwner()
	return cmp.GetCompare()
}
