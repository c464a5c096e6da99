module clientcache.bench/replay

go 1.22
