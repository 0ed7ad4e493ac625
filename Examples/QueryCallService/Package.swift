// swift-tools-version: 6.1
import PackageDescription

// A small agent on coaty-edge's library products: it answers Query events with an object filter and a Call with
// parameters. The dependency is the checkout two levels up; another package names the repository's URL instead.
let package = Package(
    name: "QueryCallService",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "coaty-edge", path: "../..")],
    targets: [
        .target(name: "RoomService", dependencies: [.product(name: "CoatyCore", package: "coaty-edge")]),
        .executableTarget(
            name: "room-service", dependencies: ["RoomService", .product(name: "CoatyCore", package: "coaty-edge")]),
        .testTarget(
            name: "RoomServiceTests",
            dependencies: [
                "RoomService", .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatyTesting", package: "coaty-edge"),
            ]),
    ]
)
