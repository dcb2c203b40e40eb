#!/usr/bin/env python3
"""Exit 0 if PNG file argv[1] exists and shows something: at least 1% of its pixels differ from the
most common colour (a blank page is all one colour). Standard library only: zlib + PNG filters."""
import collections
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type = header[:4]
    assert depth == 8 and colour_type in (2, 6), "expects 8-bit RGB or RGBA"
    channels = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    previous, out = bytearray(stride), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, up_left = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        out.extend(bytes(line[x:x + 3]) for x in range(0, stride, channels))
        previous = line
    return out


def main():
    try:
        counts = collections.Counter(pixels(sys.argv[1]))
    except (OSError, AssertionError, zlib.error, TypeError) as error:
        print(f"{sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    total = sum(counts.values())
    share = 1 - counts.most_common(1)[0][1] / total
    print(f"{sys.argv[1]}: {len(counts)} colours, {share:.1%} of pixels away from the background")
    return 0 if share >= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
