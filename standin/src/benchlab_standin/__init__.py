"""A stand-in Android phone for tests: a fake ``adbd`` that the real ``adb`` client drives.

:class:`StandinPhone` listens on TCP and speaks the ADB transport protocol; after
``adb connect 127.0.0.1:PORT`` the real adb server treats it as a network-attached device.
Shell commands run on this machine inside a sandbox directory that plays the device
filesystem (with a simulated sysfs: CPU frequencies, thermal zones, battery), and file
transfer uses the legacy sync protocol. See :mod:`benchlab_standin.adbd` for what such a
stand-in proves and what it cannot, and :mod:`benchlab_standin.adbserver` for an isolated
adb server to drive it with.
"""

from benchlab_standin.adbd import StandinPhone
from benchlab_standin.profile import DeviceProfile, arm_profile, default_profile

__all__ = ["DeviceProfile", "StandinPhone", "arm_profile", "default_profile"]
