// swift-tools-version: 6.1
import PackageDescription

// A client of the CoatyEdgeHardware product alone (the examples cover the other products): its drivers are usable
// without the Coaty runtime. Tests/Library/run builds and tests it as a package of its own.
let package = Package(
    name: "ProductClients",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "coaty-edge", path: "../../..")],
    targets: [
        .testTarget(
            name: "HardwareClientTests", dependencies: [.product(name: "CoatyEdgeHardware", package: "coaty-edge")])
    ]
)
