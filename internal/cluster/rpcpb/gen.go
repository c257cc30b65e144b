// Package rpcpb holds the generated protobuf and gRPC code of weir's
// cluster control plane (cluster.proto).
package rpcpb

// Tools: protoc from Debian's protobuf-compiler (3.21), and
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative cluster.proto
