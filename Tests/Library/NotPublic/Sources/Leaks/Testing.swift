import CoatyTesting

// CoatyTesting: the broker's child process is TestBroker's own.
func testingLeaks() {
    _ = SpawnedProcess.self
}
