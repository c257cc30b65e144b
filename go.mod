module github.com/weirproject/weir

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sync v0.25.0
)
