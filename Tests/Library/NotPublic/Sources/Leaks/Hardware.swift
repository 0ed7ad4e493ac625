import EdgeHardware

// CoatyEdgeHardware: the agent's device configuration is the agent's, the drivers are the library's.
func hardwareLeaks() {
    _ = DeviceConfiguration.self
}
