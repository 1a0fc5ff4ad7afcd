//go:build !etcd37

// The library as Debian 12 packages it, etcd 3.4.23: the import paths of its one module
// (GOPATH mode, build.sh). etcd37.go names the same things at 3.7; main.go uses only these.
package main

import (
	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
	pb "go.etcd.io/etcd/etcdserver/etcdserverpb"
	"go.etcd.io/etcd/version"
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

var library = "go.etcd.io/etcd/clientv3/concurrency " + version.Version

// ownerCompare is IsOwner()'s comparison as etcd's protobuf message (3.4's Cmp is that message).
func ownerCompare(m *Mutex) *pb.Compare {
	cmp := m.IsOwner()
	return (*pb.Compare)(&cmp)
}
