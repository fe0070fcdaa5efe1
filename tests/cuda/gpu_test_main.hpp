#pragma once
namespace spip::test {
extern int gpu_device;  // the device the GPU tests run on
}
