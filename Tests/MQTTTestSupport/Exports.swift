// The library's testing helpers (TestBroker, TestCertificates, waitUntil...) moved to the CoatyTesting product;
// the suites that import this module see them as before.
@_exported import CoatyTesting

/// The broker's child process, for the suites that start mosquitto with a configuration of their own.
package typealias ChildProcess = SpawnedProcess
