#pragma once
// Physical and angular constants shared by the rooms (C++17 and C++20 sources alike).
namespace spip {

inline constexpr double speed_of_light = 299792458.0;                       // m/s
inline constexpr double rad_to_deg = 180.0 / 3.14159265358979323846;
inline constexpr double rad_to_arcsec = 3600.0 * rad_to_deg;

}  // namespace spip
