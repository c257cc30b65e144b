package config

import (
	"maps"
	"math"
	"math/bits"
	"slices"
	"time"
)

// This file is the catalog: every option weir understands. To add one,
// declare it below and append it to catalog; Set, the docs and the tests
// pick it up from there. Regenerate docs/configuration.md afterwards with
// `go generate ./config`.

//go:generate go test -run TestMarkdownUpToDate . -args -update

// Values of the Enum options, in their canonical spelling; Get returns one
// of these.
const (
	RuntimeModeStreaming = "STREAMING"
	RuntimeModeBatch     = "BATCH"
	RuntimeModeAutomatic = "AUTOMATIC"

	StateBackendHashMap = "hashmap"
	StateBackendPebble  = "pebble"

	CheckpointModeExactlyOnce = "EXACTLY_ONCE"
	CheckpointModeAtLeastOnce = "AT_LEAST_ONCE"

	RestartStrategyNone             = "none"
	RestartStrategyFixedDelay       = "fixed-delay"
	RestartStrategyFailureRate      = "failure-rate"
	RestartStrategyExponentialDelay = "exponential-delay"

	RetentionDeleteOnCancellation = "DELETE_ON_CANCELLATION"
	RetentionRetainOnCancellation = "RETAIN_ON_CANCELLATION"
)

// Pipeline options.
// Values of scheduler-mode.
const (
	SchedulerModeDefault  = "default"
	SchedulerModeReactive = "reactive"
)

var (
	Parallelism = intOption("parallelism.default", 0, 0, math.MaxInt,
		"Parallelism of operators that do not set their own. "+
			"0 means the number of CPU cores in a local run; a JobManager treats 0 as 1, and a job submitted "+
			"to it without -p takes the JobManager's value.")

	MaxParallelism = intOption("pipeline.max-parallelism", 0, 0, 32768,
		"Upper bound for rescaling: the number of key groups that keyed state is split into, "+
			"and so the highest parallelism a keyed operator can ever run with without losing its state. "+
			"0 derives it from the parallelism as max(128, the next power of two of 1.5 × parallelism), "+
			"at most 32768.")

	PipelineName = stringOption("pipeline.name", "",
		"Name of the job, overriding the name given by the program. Empty keeps the program's name.")

	AutoWatermarkInterval = durationOption("pipeline.auto-watermark-interval", 200*time.Millisecond, false,
		"Interval at which periodic watermark generators emit watermarks. "+
			"Shorter intervals make event-time results appear sooner at the cost of more watermark traffic. "+
			"0 turns periodic emission off, as in Flink: in the DataStream API only generators that emit on events "+
			"advance the watermark (a bounded out-of-orderness one emits nothing until the input ends); "+
			"a SQL table's WATERMARK FOR emits eagerly after the row that advanced its watermark by more than the interval, "+
			"so at 0 after every advance. A SQL source subtask without rows for table.exec.source.idle-timeout "+
			"(Flink's option, default 0: never) is marked idle and stops holding the watermark back; see docs/sql.md.")

	ForceSerialization = boolOption("pipeline.force-serialization", false,
		"Make in-process exchanges encode every buffer through the record codecs, "+
			"exactly as a network exchange would, instead of passing records by reference. "+
			"Slower; tests use it to prove that every codec round-trips.")

	OperatorChaining = boolOption("pipeline.operator-chaining", true,
		"Fuse adjacent operators that have the same parallelism and a forward connection into one task, "+
			"so that records pass between them by function call instead of through an exchange.")
)

// Execution options.
var (
	RuntimeMode = enumOption("execution.runtime-mode", RuntimeModeStreaming,
		[]string{RuntimeModeStreaming, RuntimeModeBatch, RuntimeModeAutomatic},
		"How the job executes. In BATCH, rolling aggregations emit only the final result per key "+
			"instead of every update. AUTOMATIC chooses BATCH when all sources are bounded and STREAMING otherwise.")

	BufferTimeout = durationOption("execution.buffer-timeout", 100*time.Millisecond, true,
		"Longest time a partly filled output buffer waits before it is flushed downstream; "+
			"trades latency for throughput. 0 flushes after every record; "+
			"-1 ms (or -1) disables timed flushing, so that only full buffers are sent.")
)

// Task manager and network options.
var (
	NumTaskSlots = intOption("taskmanager.numberOfTaskSlots", 0, 0, math.MaxInt,
		"Number of task slots of the local mini cluster, or of a TaskManager process (weir taskmanager). "+
			"0 provides as many as the job needs in the mini cluster, and 1 slot in a TaskManager process.")

	BufferRecords = intOption("taskmanager.network.buffer-records", 1024, 1, math.MaxInt,
		"Number of records per buffer of an in-process or network exchange. "+
			"A buffer is sent when it is full or when the buffer timeout expires.")

	BuffersPerChannel = intOption("taskmanager.network.memory.buffers-per-channel", 2, 1, math.MaxInt,
		"Exclusive buffers (credits) of each input channel: how many buffers a sender may have "+
			"in flight on one channel before it waits for the receiver.")

	FloatingBuffersPerGate = intOption("taskmanager.network.memory.floating-buffers-per-gate", 8, 0, math.MaxInt,
		"Buffers shared by all channels of an input gate and lent to channels whose exclusive credits "+
			"are used up, which absorbs skew between channels.")

	NetworkBufferSize = memoryOption("taskmanager.network.memory.buffer-size", 32<<10, 4<<10,
		"Size of a buffer of the TCP exchange between the workers of a job spread over several TaskManagers: the "+
			"largest frame a producer sends, and the memory of each credit a consumer grants. The exchange inside "+
			"a process counts records instead (taskmanager.network.buffer-records). A single record must encode "+
			"within one buffer.")
)

// Cluster options: the JobManager and TaskManager processes and their
// control plane.
var (
	JobManagerRPCAddress = stringOption("jobmanager.rpc.address", "127.0.0.1",
		"Host of the JobManager's RPC server, which TaskManagers dial together with jobmanager.rpc.port "+
			"(weir taskmanager --jobmanager HOST:PORT overrides both).")

	JobManagerRPCPort = intOption("jobmanager.rpc.port", 6123, 0, 65535,
		"Port of the JobManager's RPC server. 0 picks a free port, which the JobManager prints.")

	JobManagerBindHost = stringOption("jobmanager.bind-host", "127.0.0.1",
		"Interface the JobManager's RPC server and REST API listen on. "+
			"Any address other than a loopback one (0.0.0.0 listens on all interfaces) requires security.token.")

	PrometheusPort = stringOption("metrics.reporter.prom.port", "",
		"Port, or range of ports (9249-9260: the first free one), on which the JobManager and every TaskManager serve "+
			"their metrics in Prometheus's text format at /metrics, with Flink's names prefixed weir_ and Flink's scope labels. "+
			"Empty: no Prometheus endpoint besides the JobManager's /metrics on its REST port. They listen on the process's bind host "+
			"and are guarded as the REST API is: security.token (scrape with a bearer credential), TLS and mutual TLS (security.ssl.*), "+
			"and the host names of rest.allowed-hosts.")

	RESTAddress = stringOption("rest.address", "127.0.0.1",
		"Host of the JobManager's REST API, which the weir command line dials together with rest.port.")

	RESTAllowedHosts = stringOption("rest.allowed-hosts", "",
		"Comma-separated host names, besides its own, under which the JobManager's REST API and dashboard, and the "+
			"Prometheus endpoints (metrics.reporter.prom.port) of the JobManager and the TaskManagers, answer "+
			"(the Host of a request). Their own are IP addresses, localhost, the machine's host name, rest.address, "+
			"the bind host and jobmanager.rpc.address (a TaskManager's: taskmanager.host). "+
			"Add the names of a proxy or a load balancer in front of it, or those Prometheus scrapes by; "+
			"* answers any name. A request for another name gets 421: a web page that reached the API under a name "+
			"of its own (DNS rebinding) could otherwise act as the dashboard.")

	RESTPort = intOption("rest.port", 8081, 0, 65535,
		"Port of the JobManager's REST API. 0 picks a free port, which the JobManager prints.")

	RESTServerMaxContentLength = memoryOption("rest.server.max-content-length", 512<<20, 1<<10,
		"Largest request body the JobManager's REST API reads: an uploaded program (POST /artifacts, "+
			"POST /jars/upload) may be this large. Other bodies have smaller limits of their own "+
			"(16 mb for a job submission, 1 mb for the rest), which a smaller value lowers too. "+
			"A longer body gets 413 and is not stored. Flink's default is 100 mb; a weir program "+
			"is a static executable that contains the runtime, so weir's is larger.")

	TaskManagerBindHost = stringOption("taskmanager.bind-host", "127.0.0.1",
		"Interface the TaskManager's RPC server listens on; the JobManager must be able to reach it. "+
			"Any address other than a loopback one requires security.token.")

	TaskManagerHost = stringOption("taskmanager.host", "",
		"Host the TaskManager advertises to the JobManager, which dials it. "+
			"Empty uses taskmanager.bind-host, or the host name when that is 0.0.0.0 or ::.")

	TaskManagerRPCPort = intOption("taskmanager.rpc.port", 0, 0, 65535,
		"Port of the TaskManager's RPC server. 0 picks a free port.")

	TaskManagerResourceID = stringOption("taskmanager.resource-id", "",
		"Identity of the TaskManager in the cluster. Empty derives it from its address and a random suffix.")

	TaskManagerRegistrationTimeout = durationOption("taskmanager.registration.timeout", 5*time.Minute, false,
		"How long a TaskManager keeps trying to register with the JobManager, at start and after it lost the "+
			"JobManager, before it exits with an error.")

	HeartbeatInterval = durationOption("heartbeat.interval", time.Second, false,
		"Interval at which the JobManager sends heartbeats to each TaskManager. "+
			"TaskManagers adopt the JobManager's value when they register.")

	HeartbeatTimeout = durationOption("heartbeat.timeout", 5*time.Second, false,
		"Time without an answered heartbeat after which the JobManager removes a TaskManager and its slots, "+
			"and without a received heartbeat after which a TaskManager registers again. "+
			"Must not be shorter than heartbeat.interval.")

	RPCTimeout = durationOption("rpc.timeout", 10*time.Second, false,
		"Deadline of control-plane RPCs other than heartbeats, whose deadline is heartbeat.interval.")

	SlotRequestTimeout = durationOption("slot.request.timeout", 5*time.Minute, false,
		"How long a job submitted to the cluster, or restarting on it, waits for enough free slots "+
			"before it fails. A job's -D setting overrides the JobManager's.")

	SchedulerMode = enumOption("scheduler-mode", SchedulerModeDefault, []string{SchedulerModeDefault, SchedulerModeReactive},
		"How the JobManager sizes jobs. default: a job runs at the parallelism it was submitted with and waits "+
			"for that many slots. reactive (Flink's reactive mode): a job runs at the parallelism that the free "+
			"slots allow, capped by its max parallelism; when TaskManagers join it is rescaled up, and when one "+
			"is lost it restarts at what is left, each time from its latest checkpoint (by key groups).")

	FaultInjectionSignals = boolOption("execution.fault-injection.signals", false,
		"For fault-injection tests such as weir verify: a job's worker process that receives SIGUSR1 panics in one "+
			"of its running tasks, and one that receives SIGUSR2 fails one with an error, as faulty user code would. "+
			"Off in production: the signals then keep their default action.")

	ClusterEvenlySpreadOutSlots = boolOption("cluster.evenly-spread-out-slots", false,
		"Spread a job's slots over the TaskManagers even when one TaskManager has all the free slots it needs. "+
			"By default such a job runs in one TaskManager, where its exchanges stay in memory; a job that no "+
			"single TaskManager can hold is always spread. A job's -D setting overrides the JobManager's.")

	ProcessWorkingDir = stringOption("process.working-dir", "",
		"Directory where a JobManager keeps uploaded job artifacts and a TaskManager its cached artifacts and the "+
			"working directories and logs of its job workers. Empty uses a new directory under the system's "+
			"temporary directory, removed when the process stops.")
)

// Security options of the cluster.
var (
	SecurityToken = stringOption("security.token", "",
		"Shared secret that every RPC, REST request and Prometheus scrape must carry (as \"Authorization: Bearer TOKEN\"); "+
			"TaskManagers and the weir command line send it. Required when the JobManager or a TaskManager "+
			"listens on a non-loopback address. The WEIR_TOKEN environment variable and --token also set it, "+
			"and keep it out of files. JobManagers, TaskManagers and weir cluster start refuse a token of fewer "+
			"than 16 non-space characters, one with white space at either end, and one with characters other "+
			"than printable ASCII (openssl rand -hex 32 makes a good one).")

	SSLEnabled = boolOption("security.ssl.enabled", false,
		"Use TLS for the cluster's RPC, REST and Prometheus connections, both serving and dialing.")

	SSLCert = stringOption("security.ssl.cert", "",
		"PEM certificate (chain) that this process's RPC, REST and Prometheus servers present when security.ssl.enabled is true, "+
			"and its clients too with security.ssl.mutual.")

	SSLKey = stringOption("security.ssl.key", "",
		"PEM private key of security.ssl.cert.")

	SSLCA = stringOption("security.ssl.ca", "",
		"PEM CA certificates that clients trust when they verify a server's certificate, and, with "+
			"security.ssl.mutual, that servers trust when they verify a client's. "+
			"Empty trusts the system's roots (not allowed with security.ssl.mutual).")

	SSLMutual = boolOption("security.ssl.mutual", false,
		"Mutual TLS: with security.ssl.enabled, every server (JobManager RPC and REST, TaskManager RPC, the Prometheus endpoints, "+
			"the job workers' data connections) requires a client certificate signed by security.ssl.ca, "+
			"and every client (TaskManagers, the JobManager, workers, the weir command line) presents "+
			"security.ssl.cert and security.ssl.key. Every process then needs all three of them.")
)

// State and fault tolerance options.
var (
	StateBackend = enumOption("state.backend.type", StateBackendHashMap,
		[]string{StateBackendHashMap, StateBackendPebble},
		"Where keyed state lives: hashmap keeps it as objects in memory; "+
			"pebble keeps it serialized in an embedded Pebble store on local disk, for state larger than memory. "+
			"Window operators keep their state on the heap whichever is chosen.")

	CheckpointInterval = durationOption("execution.checkpointing.interval", 0, false,
		"Interval between the starts of two checkpoints. 0 disables checkpointing.")

	CheckpointMode = enumOption("execution.checkpointing.mode", CheckpointModeExactlyOnce,
		[]string{CheckpointModeExactlyOnce, CheckpointModeAtLeastOnce},
		"Guarantee of checkpoints. EXACTLY_ONCE aligns checkpoint barriers so that restored state "+
			"reflects every record exactly once; AT_LEAST_ONCE skips the alignment for lower latency, "+
			"so that after a recovery some records may be applied to state twice.")

	CheckpointTimeout = durationOption("execution.checkpointing.timeout", 10*time.Minute, false,
		"Time after which a checkpoint that has not completed is aborted.")

	CheckpointMinPause = durationOption("execution.checkpointing.min-pause", 0, false,
		"Least time between the end of one checkpoint and the start of the next, so that a job "+
			"whose checkpoints are slow still makes progress between them.")

	UnalignedCheckpoints = boolOption("execution.checkpointing.unaligned.enabled", false,
		"In EXACTLY_ONCE mode, let checkpoint barriers overtake the records in flight: a task snapshots as soon as "+
			"the first barrier of a checkpoint reaches it and stores the records still in flight on its input channels "+
			"with the checkpoint, so that checkpoints complete quickly under backpressure. They are larger, and a job "+
			"restored from one cannot change the parallelism of tasks with in-flight records. Savepoints are always aligned.")

	AlignedCheckpointTimeout = durationOption("execution.checkpointing.aligned-checkpoint-timeout", 0, false,
		"Only with execution.checkpointing.unaligned.enabled: 0 makes every checkpoint unaligned from the start; "+
			"a positive duration starts checkpoints aligned, and a task whose alignment has lasted longer switches "+
			"that checkpoint to unaligned.")

	CheckpointMaxConcurrent = intOption("execution.checkpointing.max-concurrent-checkpoints", 1, 1, 1,
		"Checkpoints in flight at once. Only 1 is supported.")

	TolerableCheckpointFailures = intOption("execution.checkpointing.tolerable-failed-checkpoints", -1, -1, math.MaxInt,
		"Consecutive failed checkpoints (declined or timed out) a job tolerates; one more fails it "+
			"(and the restart strategy decides). -1 tolerates any number.")

	ExternalizedRetention = enumOption("execution.checkpointing.externalized-checkpoint-retention", RetentionDeleteOnCancellation,
		[]string{RetentionDeleteOnCancellation, RetentionRetainOnCancellation},
		"What happens to the checkpoints in state.checkpoints.dir when the job is cancelled: "+
			"DELETE_ON_CANCELLATION removes them, RETAIN_ON_CANCELLATION keeps them for --from-savepoint. "+
			"They are always kept when the job fails. On a cluster the JobManager removes them, and learns the "+
			"program's setting from the checkpoints its workers ask it to confirm.")

	NumRetainedCheckpoints = intOption("state.checkpoints.num-retained", 1, 1, math.MaxInt,
		"Completed checkpoints kept in state.checkpoints.dir; older ones are deleted.")

	JobManagerStorageMaxSize = memoryOption("state.checkpoint-storage.jobmanager.max-size", 5<<20, 1,
		"Largest checkpoint kept in memory when state.checkpoints.dir is not set (the jobmanager storage); "+
			"a larger one fails with an error that says so.")

	StateFileThreshold = memoryOption("state.storage.fs.memory-threshold", 20<<10, 0,
		"Operator state up to this size is kept inline in a checkpoint's _metadata; larger state goes to a file "+
			"of its own in the checkpoint's directory.")

	IncrementalCheckpoints = boolOption("state.backend.incremental", true,
		"With the pebble backend and a checkpoint directory, checkpoints upload only the store's files that no "+
			"earlier checkpoint uploaded, into <dir>/<job-id>/shared/ (on a cluster shared/attempt-<k>/, one per "+
			"attempt). false uploads all of them into each "+
			"checkpoint's own directory (full checkpoints). Savepoints are always full and self-contained.")

	PebbleBlockCacheSize = memoryOption("state.backend.pebble.block-cache-size", 32<<20, 1<<20,
		"Block cache of each pebble store (one per keyed operator subtask): the SST blocks, index and filter "+
			"blocks read most recently. Too small a cache makes state reads go to the file system.")

	PebbleL0CompactionThreshold = intOption("state.backend.pebble.l0-compaction-threshold", 16, 2, 1000,
		"Sublevels of level 0 at which a pebble store compacts them into the levels below (Pebble's "+
			"L0CompactionThreshold; writes stop at four times as many). State written back and rewritten often "+
			"(evicted top-10 lists, waiting records) rewrites the lower levels with each such compaction: 16 "+
			"rather than Pebble's 4 cut that by most of it (Nexmark q18 and q19 at a tenth of their state in "+
			"the cache: +20 to +30 %), at the cost of more files to consult per store read.")

	PebbleStateCacheSize = memoryOption("state.backend.pebble.cache-size", 64<<20, 0,
		"Cache of decoded state values in front of each pebble store (one per keyed operator subtask): values, "+
			"whole lists and map entries are read once, then read and changed in memory, "+
			"written back to the store in batches when evicted (least recently used first; of a time map's entries waiting for the watermark, those it reaches last, "+
			"which go to spill files next to the store instead) and at every "+
			"checkpoint. 0 turns it off: every state access is a store read or write.")

	ManagedMemorySize = memoryOption("taskmanager.memory.managed.size", 256<<20, 1<<20,
		"Memory budget of the operators that gather their whole input in batch mode (Reduce, Sum, Min, Max and "+
			"their kin), shared by all of them in a process: past its share an operator sorts what it holds, "+
			"writes it to a run file under io.tmp.dirs and starts afresh, and merges the runs when its input "+
			"ends, so that input far larger than memory runs.")

	TmpDirs = stringOption("io.tmp.dirs", "",
		"Local directory for the working files of operators, such as the pebble state backend's stores. "+
			"Empty uses the system's temporary directory.")

	CheckpointsDir = stringOption("state.checkpoints.dir", "",
		"Directory where completed checkpoints are written as <dir>/<job-id>/chk-<n>/_metadata plus state files, "+
			"with the files of incremental snapshots in <dir>/<job-id>/shared/ (shared/attempt-<k>/ per attempt on "+
			"a cluster): a path, a file:// URI, or "+
			"s3://bucket/dir (query parameters region, endpoint, use_path_style, anonymous; credentials from the "+
			"usual AWS environment variables or files). Empty keeps checkpoints in memory (the jobmanager storage), "+
			"which survives task failures but not the process.")

	RestartAttempts = intOption("restart-strategy.fixed-delay.attempts", 3, 0, math.MaxInt,
		"Number of restarts the fixed-delay strategy allows before the job fails.")

	RestartDelay = durationOption("restart-strategy.fixed-delay.delay", time.Second, false,
		"Pause before each restart of the fixed-delay strategy.")

	FailureRateMaxFailures = intOption("restart-strategy.failure-rate.max-failures-per-interval", 1, 1, math.MaxInt,
		"Failures the failure-rate strategy tolerates within one interval; one more fails the job.")

	FailureRateInterval = durationOption("restart-strategy.failure-rate.failure-rate-interval", time.Minute, false,
		"Interval over which the failure-rate strategy counts failures.")

	FailureRateDelay = durationOption("restart-strategy.failure-rate.delay", time.Second, false,
		"Pause before each restart of the failure-rate strategy.")

	ExponentialInitialBackoff = durationOption("restart-strategy.exponential-delay.initial-backoff", time.Second, false,
		"First pause of the exponential-delay strategy.")

	ExponentialMaxBackoff = durationOption("restart-strategy.exponential-delay.max-backoff", time.Minute, false,
		"Longest pause of the exponential-delay strategy.")

	ExponentialMultiplier = floatOption("restart-strategy.exponential-delay.backoff-multiplier", 1.5, 1,
		"Factor by which the exponential-delay pause grows after each failure.")

	ExponentialResetThreshold = durationOption("restart-strategy.exponential-delay.reset-backoff-threshold", time.Hour, false,
		"A job that ran this long without failing starts again from the initial backoff.")

	ExponentialAttempts = intOption("restart-strategy.exponential-delay.attempts-before-reset-backoff", math.MaxInt32, 1, math.MaxInt,
		"Restarts the exponential-delay strategy allows before the job fails (counted since the last reset).")

	RestartStrategy = enumOption("restart-strategy.type", RestartStrategyNone,
		[]string{RestartStrategyNone, RestartStrategyFixedDelay, RestartStrategyFailureRate, RestartStrategyExponentialDelay},
		"How a failed job is restarted: none fails the job at the first failure; "+
			"fixed-delay restarts a limited number of times with a fixed delay; "+
			"failure-rate restarts while failures stay below a rate; "+
			"exponential-delay restarts with a growing delay.")
)

// catalog lists every option. It is a plain slice so that the set of keys is
// fixed at compile time and visible in one place.
var catalog = []catalogOption{
	Parallelism,
	MaxParallelism,
	PipelineName,
	AutoWatermarkInterval,
	ForceSerialization,
	OperatorChaining,
	RuntimeMode,
	BufferTimeout,
	NumTaskSlots,
	BufferRecords,
	BuffersPerChannel,
	FloatingBuffersPerGate,
	NetworkBufferSize,
	StateBackend,
	CheckpointInterval,
	CheckpointMode,
	CheckpointTimeout,
	CheckpointMinPause,
	UnalignedCheckpoints,
	AlignedCheckpointTimeout,
	CheckpointMaxConcurrent,
	TolerableCheckpointFailures,
	ExternalizedRetention,
	NumRetainedCheckpoints,
	CheckpointsDir,
	StateFileThreshold,
	IncrementalCheckpoints,
	PebbleBlockCacheSize,
	PebbleL0CompactionThreshold,
	PebbleStateCacheSize,
	ManagedMemorySize,
	TmpDirs,
	JobManagerStorageMaxSize,
	RestartStrategy,
	RestartAttempts,
	RestartDelay,
	FailureRateMaxFailures,
	FailureRateInterval,
	FailureRateDelay,
	ExponentialInitialBackoff,
	ExponentialMaxBackoff,
	ExponentialMultiplier,
	ExponentialResetThreshold,
	ExponentialAttempts,
	JobManagerRPCAddress,
	JobManagerRPCPort,
	JobManagerBindHost,
	PrometheusPort,
	RESTAddress,
	RESTPort,
	RESTAllowedHosts,
	RESTServerMaxContentLength,
	TaskManagerBindHost,
	TaskManagerHost,
	TaskManagerRPCPort,
	TaskManagerResourceID,
	TaskManagerRegistrationTimeout,
	HeartbeatInterval,
	HeartbeatTimeout,
	RPCTimeout,
	SlotRequestTimeout,
	SchedulerMode,
	ClusterEvenlySpreadOutSlots,
	FaultInjectionSignals,
	ProcessWorkingDir,
	SecurityToken,
	SSLEnabled,
	SSLCert,
	SSLKey,
	SSLCA,
	SSLMutual,
	HAType,
	HAEtcdEndpoints,
	HAClusterID,
	HAStorageDir,
	HAEtcdLeaseTTL,
}

var (
	catalogIndex = indexCatalog()
	catalogKeys  = slices.Sorted(maps.Keys(catalogIndex))
)

func indexCatalog() map[string]catalogOption {
	m := make(map[string]catalogOption, len(catalog))
	for _, o := range catalog {
		key := o.info().Key
		if _, dup := m[key]; dup {
			panic("config: option " + key + " declared twice")
		}
		m[key] = o
	}
	return m
}

// DerivedMaxParallelism is the max parallelism used when
// pipeline.max-parallelism is 0: max(128, the next power of two of
// 1.5 × parallelism), capped at 32768, as in Flink. Deriving it from the
// parallelism leaves headroom to scale up later without changing the number
// of key groups, which would make existing keyed state unreadable.
func DerivedMaxParallelism(parallelism int) int {
	p := parallelism + parallelism/2
	if p <= 128 {
		return 128
	}
	if p >= 32768 {
		return 32768
	}
	return 1 << bits.Len(uint(p-1))
}
