/// A FIFO of bytes: append at the end, read from the front.
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0
    var count: Int { storage.count - head }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if head > 65_536 && head * 2 > storage.count {
            storage.removeSubrange(0..<head)
            head = 0
        }
        storage.append(contentsOf: bytes)
    }

    mutating func read(into destination: UnsafeMutableRawBufferPointer, count n: Int) {
        storage.withUnsafeBytes { src in
            destination.baseAddress!.copyMemory(from: src.baseAddress! + head, byteCount: n)
        }
        head += n
        if head == storage.count { storage.removeAll(keepingCapacity: true); head = 0 }
    }

    mutating func removeAll() { storage.removeAll(keepingCapacity: false); head = 0 }
}
