package callers

// TestOnly is in a test file: the walk must skip it.
const TestOnly = "nodeType:Gadget"
