package file

// FilterPaths makes the source read only the files for which keep returns
// true, deciding by the path alone, before a file is opened: partition
// pruning of a table laid out in directories (Hive's col=value). keep is
// called from the source's subtasks, concurrently. It returns s.
func (s *FormatSource[T]) FilterPaths(keep func(path string) bool) *FormatSource[T] {
	s.keep = keep
	return s
}

func (s *FormatSource[T]) keeps(path string) bool {
	return s.keep == nil || s.keep(path)
}
