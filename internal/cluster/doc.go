// Package cluster runs weir as a cluster of processes: a JobManager that
// coordinates, and TaskManagers that offer task slots to it.
//
// The control plane is gRPC (the generated code is in rpcpb). TaskManagers
// register with the JobManager's resource manager ([SlotPool]); from then on
// the JobManager heartbeats every TaskManager each heartbeat.interval. A
// TaskManager that answers none for heartbeat.timeout is removed together
// with its slots; a TaskManager that receives none for heartbeat.timeout
// registers again, and exits with an error if that does not succeed within
// taskmanager.registration.timeout. Every RPC carries a deadline.
//
// The JobManager also serves a REST API (JSON, Flink's paths) and Prometheus
// metrics. Servers listen on loopback by default; listening anywhere else
// requires a shared token, and TLS can protect both RPC and REST.
//
// Jobs are submitted to the JobManager's dispatcher, which allocates their
// slots, on one TaskManager or spread over several, and deploys one worker
// process per TaskManager that holds slots of the attempt. The workers of
// an attempt learn each other's data addresses through the JobManager
// (ReportWorker) and exchange records over TCP; the dispatcher restarts a
// job whole when one of its workers fails or its TaskManager is lost.
package cluster
