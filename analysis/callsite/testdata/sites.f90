! Test program for package callsite (Fortran): a module procedure calls the
! C function rec (rec.c) on a known line.
module halo
  use iso_c_binding
  implicit none
  interface
    subroutine rec(site) bind(C, name="rec")
      import :: c_char
      character(kind=c_char), dimension(*) :: site
    end subroutine
  end interface
contains
  subroutine exchange()
    call rec("modproc" // c_null_char) ! site: modproc
  end subroutine
end module halo

program sites
  use halo
  implicit none
  call rec("program" // c_null_char) ! site: program
  call exchange()
  call maps()
contains
  subroutine maps()
    interface
      subroutine print_maps() bind(C, name="print_maps")
      end subroutine
    end interface
    call print_maps()
  end subroutine
end program sites
