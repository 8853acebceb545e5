# Pinned upstream grammars, fetched from the npm registry by `make deps` (grammar/fetch.sh).
# Both are tree-sitter ABI 14, the newest that libtree-sitter 0.20.7 loads.
TS_CPP_VERSION = 0.23.4
TS_CPP_SHA256 = 615d152f70e7a6bed8f15a93c3c0c264c40dc71c1b6a1445646fff9439e776bc
TS_PYTHON_VERSION = 0.23.6
TS_PYTHON_SHA256 = aab5b860d93dbf84b37fed532f7dacc0468ede5387d0c74911d68f964287662a
