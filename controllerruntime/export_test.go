package controllerruntime

// ListAndWatch makes the informers that c creates from now on list, then
// watch, instead of streaming their initial state with watch-list: the
// protocol of client-go's informers with the WatchListClient gate off, for
// the benchmarks' like-with-like comparison.
func ListAndWatch(c *Cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listAndWatch = true
}
