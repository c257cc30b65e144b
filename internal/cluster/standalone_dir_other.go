//go:build !unix

package cluster

// oNoFollow is 0 where symbolic links cannot be refused at open; weir
// cluster start and stop are Unix only (detach refuses to start).
const oNoFollow = 0

func makeStandaloneDir(dir string) (string, error) { return dir, errNotUnix }

func checkStandaloneDir(dir string) (string, error) { return dir, errNotUnix }
