import CoatySharedObjects

// CoatySharedObjects: the wire format of shared objects is not an API.
func sharedObjectLeaks() {
    _ = SharedObjectWire.objectType
}
