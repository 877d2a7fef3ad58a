"""ARM: alignment-oriented retrieval over passages and tables, with an MIP structure solver.

Examples:
    >>> from retrievekit.core.arm import ArmConfig
    >>> ArmConfig().expand_ks
    (3, 4, 5)
"""

from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.method import Arm, build_arm, build_arm_no_mip, build_arm_no_verify, create_arm

__all__ = ["Arm", "ArmConfig", "build_arm", "build_arm_no_mip", "build_arm_no_verify", "create_arm"]
