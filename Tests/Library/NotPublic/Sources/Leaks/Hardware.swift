import EdgeHardware

// CoatyEdgeHardware: the agent's device configuration and output logic are the agent's, the drivers are the
// library's.
func hardwareLeaks() {
    _ = DeviceConfiguration.self
    _ = OutputLogic.self
}
