//go:build !unix

package cluster

func processCPUSeconds() float64 { return -1 }
