package mesh

// Service is the old name of Store, kept only until registry and examples
// move to the new name (the merge of the registry split); it will be removed.
type Service = Store
