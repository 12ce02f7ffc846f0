/** Types for the parts of js-aruco2's image-processing module (src/cv.js, CommonJS) that the detector uses. */
declare module 'js-aruco2/src/cv.js' {
  interface CvPoint {
    x: number;
    y: number;
  }
  type CvContour = CvPoint[] & { hole?: boolean };
  interface CvImage {
    width: number;
    height: number;
    data: Uint8ClampedArray | Uint8Array | Int32Array;
  }
  interface CvModule {
    Image: new (width?: number, height?: number, data?: CvImage['data']) => CvImage;
    /** Box blur of radius kernelSize (1..15). */
    stackBoxBlur(src: CvImage, dst: CvImage, kernelSize: number): CvImage;
    /** dst = 255 where src is darker than its (2k+1)-box-blurred neighbourhood by at least `threshold`. */
    adaptiveThreshold(src: CvImage, dst: CvImage, kernelSize: number, threshold: number): CvImage;
    /** Suzuki border following; `binary` is scratch space of (w+2)*(h+2) signed integers. */
    findContours(src: CvImage, binary: Int32Array): CvContour[];
    approxPolyDP(contour: readonly CvPoint[], epsilon: number): CvPoint[];
    isContourConvex(contour: readonly CvPoint[]): boolean;
    minEdgeLength(poly: readonly CvPoint[]): number;
    perimeter(poly: readonly CvPoint[]): number;
  }
  const module: { CV: CvModule };
  export default module;
}
